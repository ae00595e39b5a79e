"""Manifests to snapshot: field mapping and error locations."""

from __future__ import annotations

import pytest

from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.model import JobPhase, QueueState, TaskStatus

DOCS = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: prod}
value: 500
globalDefault: true
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
spec:
  unschedulable: true
  taints: [{key: k, value: v, effect: NoSchedule}]
status: {allocatable: {cpu: 1500m, memory: 2Gi, nvidia.com/gpu: "2"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q, annotations: {volcano.sh/hierarchy: root/a/q, volcano.sh/hierarchy-weights: 1/2/3}}
spec:
  weight: 3
  reclaimable: false
  capability: {cpu: "4"}
  guarantee: {resource: {cpu: "1"}}
  deserved: {cpu: "2"}
  parent: a
  priority: 7
status: {state: Closing}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns, annotations: {volcano.sh/preemptable: "true"}}
spec: {minMember: 2, minTaskMember: {worker: 2}, queue: q, minResources: {cpu: "2"}}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata:
  name: w-0
  namespace: ns
  annotations: {scheduling.k8s.io/group-name: pg, volcano.sh/task-spec: worker, volcano.sh/preemptable: "false"}
  deletionTimestamp: "2026-01-01T00:00:00Z"
spec:
  nodeName: n1
  priority: 3
  containers:
  - {name: a, resources: {requests: {cpu: 500m, memory: 1Gi}}}
  - {name: b, resources: {requests: {cpu: 250m}}}
  initContainers:
  - {name: init, resources: {requests: {cpu: "1"}}}
  tolerations: [{key: k, operator: Exists}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: ns}
spec: {schedulerName: default-scheduler, nodeName: n1, containers: [{name: c}]}
status: {phase: Pending}
"""


def test_fields_are_mapped() -> None:
    snap = snapshot_from_manifests(load_manifests(DOCS))
    node = snap.nodes[0]
    assert node.allocatable.cpu == 1500
    assert node.allocatable.pods == 110
    assert node.allocatable.scalars["nvidia.com/gpu"] == 2
    assert node.unschedulable
    assert node.taints[0].key == "k"
    q = next(q for q in snap.queues if q.name == "q")
    assert (q.weight, q.reclaimable, q.parent, q.priority, q.state) == (3, False, "a", 7, QueueState.CLOSING)
    assert q.capability is not None
    assert q.capability.cpu == 4000
    assert q.hierarchy == "root/a/q"
    assert {q.name for q in snap.queues} >= {"root", "default"}
    pg = snap.jobs[0]
    assert (pg.key, pg.min_member, dict(pg.min_task_member), pg.phase, pg.preemptable) == (
        "ns/pg",
        2,
        {"worker": 2},
        JobPhase.INQUEUE,
        True,
    )
    w0 = next(t for t in snap.tasks if t.name == "w-0")
    assert w0.status == TaskStatus.RELEASING
    assert w0.requests.cpu == 1000  # max(500m + 250m, 1 init)
    assert w0.requests.memory == 1024**3
    assert w0.requests.pods == 1
    assert (w0.role, w0.preemptable, w0.priority, w0.job) == ("worker", False, 3, "ns/pg")
    assert w0.required_affinity[0].match_expressions[0].values == ("a",)
    other = next(t for t in snap.tasks if t.name == "other")
    assert other.job == ""
    assert other.status == TaskStatus.BOUND
    assert snap.priority_classes[0].global_default


def test_errors_name_document_object_and_field() -> None:
    with pytest.raises(ManifestError) as info:
        snapshot_from_manifests(load_manifests(DOCS.replace("weight: 3", 'weight: "3"')))
    err = info.value
    assert (err.document, err.object, err.field) == (3, "Queue q", "spec.weight")


def test_duplicates_are_rejected() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    with pytest.raises(ManifestError, match="duplicate of document 1"):
        snapshot_from_manifests(load_manifests(text))


PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  selector:
    matchLabels: {app: web}
    matchExpressions: [{key: tier, operator: In, values: [front]}]
status:
  disruptionsAllowed: 2
  disruptedPods: {web-0: "2024-01-01T00:00:00Z"}
"""


def test_pod_disruption_budgets_are_read_for_the_pdb_plugin() -> None:
    (pdb,) = snapshot_from_manifests(load_manifests(PDB)).pod_disruption_budgets
    assert (pdb.name, pdb.namespace, pdb.disruptions_allowed, pdb.disrupted_pods) == ("web", "shop", 2, {"web-0"})
    assert pdb.match_labels == (("app", "web"),)
    assert pdb.match_expressions[0].values == ("front",)


def test_a_pod_disruption_budget_with_a_bad_field_is_refused_by_name() -> None:
    with pytest.raises(ManifestError) as info:
        snapshot_from_manifests(load_manifests(PDB.replace("disruptionsAllowed: 2", 'disruptionsAllowed: "2"')))
    assert (info.value.object, info.value.field) == ("PodDisruptionBudget shop/web", "status.disruptionsAllowed")
    with pytest.raises(ManifestError) as info:
        snapshot_from_manifests(load_manifests(PDB.replace("operator: In", "operator: Gt")))
    assert info.value.field == "spec.selector.matchExpressions"


QUEUE_AFFINITY = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: q
  annotations: {volcano.sh/nodegroup-resource-limits: '{"g1": {"cpu": "3"}}'}
spec:
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [g1, g2]
      preferredDuringSchedulingIgnoredDuringExecution: [g1]
    nodeGroupAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [g3]
"""


def test_queue_node_group_affinity_is_read_for_the_nodegroup_plugin() -> None:
    queue = next(q for q in snapshot_from_manifests(load_manifests(QUEUE_AFFINITY)).queues if q.name == "q")
    aff = queue.node_group_affinity
    assert aff is not None
    assert (aff.required, aff.preferred, aff.anti_required, aff.anti_preferred) == (("g1", "g2"), ("g1",), ("g3",), ())
    assert queue.node_group_resource_limits == '{"g1": {"cpu": "3"}}'
    plain = next(q for q in snapshot_from_manifests(load_manifests(QUEUE_AFFINITY)).queues if q.name == "default")
    assert plain.node_group_affinity is None


def test_a_queue_affinity_with_a_bad_field_is_refused_by_name() -> None:
    with pytest.raises(ManifestError) as info:
        snapshot_from_manifests(load_manifests(QUEUE_AFFINITY.replace("[g3]", "[3]")))
    assert info.value.field == "spec.affinity.nodeGroupAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def _two_jobs(first: dict[str, str], second: dict[str, str]) -> str:
    """A 1-CPU node and two one-pod PodGroups of 1 CPU (only one fits), with the given metadata."""
    docs = [
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}",
    ]
    for name, meta in (("a", first), ("b", second)):
        extra = "".join(f", {k}: '{v}'" for k, v in meta.items())
        docs.append(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
            f"metadata: {{name: {name}, namespace: ns{extra}}}\nspec: {{minMember: 1}}\nstatus: {{phase: Inqueue}}"
        )
        docs.append(
            f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}-0, namespace: ns{extra},"
            f" annotations: {{scheduling.k8s.io/group-name: {name}}}}}\n"
            "spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n"
            "status: {phase: Pending}"
        )
    return "\n---\n".join(docs)


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        ({}, {}, "a"),  # no timestamps: file order
        ({"creationTimestamp": "2024-01-02T00:00:00Z"}, {"creationTimestamp": "2024-01-01T00:00:00Z"}, "b"),
        ({"creationTimestamp": "2024-01-01T00:00:00Z"}, {"creationTimestamp": "2024-01-02T00:00:00Z"}, "a"),
        # equal timestamps tie on uid
        (
            {"creationTimestamp": "2024-01-01T00:00:00Z", "uid": "uid-2"},
            {"creationTimestamp": "2024-01-01T00:00:00Z", "uid": "uid-1"},
            "b",
        ),
        ({}, {"creationTimestamp": "2024-01-01T00:00:00Z"}, "b"),  # one without: created now, after it
    ],
)
def test_equal_jobs_are_served_in_creation_timestamp_order(
    first: dict[str, str], second: dict[str, str], winner: str
) -> None:
    """A file's objects are created in creationTimestamp order, then uid, when they carry one
    (Kubernetes' and Volcano's order); objects without one come after, in file order."""
    from scheduler import parse_config, run_cycle

    snap = snapshot_from_manifests(load_manifests(_two_jobs(first, second)))
    conf = parse_config("actions: allocate\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: predicates}]\n")
    assert list(run_cycle(snap, conf).binds) == [f"ns/{winner}-0"]
