"""The pdb plugin keeps preempt / reclaim victims within PodDisruptionBudgets (see scheduler/plugins/pdb.py).

Volcano's own cases are in tests/scheduler/volcano_cases/pdb.yaml; these cover what they do not:
pods already disrupted, other namespaces, selectors with expressions, several PDBs at once.
"""

from __future__ import annotations

from scheduler.config import parse_config
from scheduler.cycle import run_cycle
from scheduler.decode import load_manifests, snapshot_from_manifests
from scheduler.model import NodeSelectorRequirement, Task
from scheduler.policies import PodDisruptionBudget

POD = Task(uid="u", name="web-1", namespace="shop", labels={"app": "web", "tier": "front"})


def test_a_pdb_selects_pods_of_its_namespace_matching_a_non_empty_selector() -> None:
    pdb = PodDisruptionBudget("p", "shop", (("app", "web"),))
    assert pdb.selects(POD)
    assert not PodDisruptionBudget("p", "other", (("app", "web"),)).selects(POD)
    assert not PodDisruptionBudget("p", "shop", ()).selects(POD)  # empty selector: skipped, as Volcano
    assert not PodDisruptionBudget("p", "shop", None).selects(POD)
    expr = NodeSelectorRequirement("tier", "NotIn", ("front",))
    assert not PodDisruptionBudget("p", "shop", (("app", "web"),), (expr,)).selects(POD)


def _run(pdbs: str, labels: str = "{app: web}") -> list[str]:
    """Preempt on one 3-CPU node full of three web pods; a pending pod needs all three CPUs."""
    pods = "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, namespace: shop, labels: {labels}, annotations: {{scheduling.k8s.io/group-name: web}}}}
spec: {{nodeName: n1, containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]}}
status: {{phase: Running}}
"""
        for i in range(3)
    )
    text = f"""
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status: {{allocatable: {{cpu: "3", memory: 8Gi, pods: "10"}}}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: web, namespace: shop}}
spec: {{minMember: 0, queue: default}}
status: {{phase: Running}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: big, namespace: shop}}
spec: {{minMember: 1, queue: default}}
status: {{phase: Inqueue}}
---
apiVersion: v1
kind: Pod
metadata: {{name: big-0, namespace: shop, annotations: {{scheduling.k8s.io/group-name: big}}}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "3"}}}}}}]}}
{pods}{pdbs}"""
    config = parse_config(
        {
            "actions": "preempt",
            "tiers": [{"plugins": [{"name": "pdb"}, {"name": "gang", "enablePreemptable": False}]}],
        }
    )
    result = run_cycle(snapshot_from_manifests(load_manifests(text)), config)
    return sorted(e.task for e in result.evictions)


def _pdb(name: str, allowed: int, disrupted: str = "{}", labels: str = "{app: web}") -> str:
    return f"""---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: shop}}
spec: {{selector: {{matchLabels: {labels}}}}}
status: {{disruptionsAllowed: {allowed}, disruptedPods: {disrupted}}}
"""


def test_victims_stay_within_the_budget() -> None:
    everyone = ["shop/web-0", "shop/web-1", "shop/web-2"]
    assert _run("") == everyone
    assert _run(_pdb("p", 3)) == everyone
    assert _run(_pdb("p", 2)) == []  # two victims are not enough room: nothing is evicted


def test_pods_already_disrupted_do_not_use_the_budget() -> None:
    assert _run(_pdb("p", 2, "{web-0: '2024-01-01T00:00:00Z'}")) == ["shop/web-0", "shop/web-1", "shop/web-2"]


def test_every_pdb_covering_a_pod_must_allow_it() -> None:
    assert _run(_pdb("p", 3) + _pdb("q", 2)) == []
    assert _run(_pdb("p", 3) + _pdb("q", 0, labels="{app: db}")) == ["shop/web-0", "shop/web-1", "shop/web-2"]


def test_pods_without_labels_are_never_victims() -> None:
    """As Volcano's pdb plugin, which skips a pod without labels before looking at any PDB."""
    assert _run("", labels="{}") == []
    assert _run(_pdb("p", 3), labels="{}") == []
