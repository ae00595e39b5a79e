"""The simulator CLI, run as a subprocess."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

STATE = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team}
spec: {weight: 2, capability: {cpu: "8"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1, namespace: ns}
spec: {minMember: 2, queue: team, minResources: {cpu: "4"}, priorityClassName: high}
---
apiVersion: v1
kind: Pod
metadata: {name: p0, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg1}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "2", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg1}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "2", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo, namespace: ns}
spec:
  schedulerName: volcano
  nodeSelector: {zone: nowhere}
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def run(tmp_path: pathlib.Path, state: str, *args: str, conf: str | None = None) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "state.yaml"
    path.write_text(state, encoding="utf-8")
    cmd = [sys.executable, "-m", "scheduler", "simulate", str(path), *args]
    if conf is not None:
        cpath = tmp_path / "conf.yaml"
        cpath.write_text(conf, encoding="utf-8")
        cmd += ["--conf", str(cpath)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)


def test_it_simulates_cycles(tmp_path: pathlib.Path) -> None:
    proc = run(tmp_path, STATE, "--cycles", "2")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    first, second = out["cycles"]
    assert set(first) == {"binds", "evictions", "pipelined", "podgroups", "unschedulable"}
    assert first["binds"] == {"ns/p0": "n2", "ns/p1": "n2"}
    assert first["podgroups"]["ns/pg1"] == "Inqueue"
    assert "ns/podgroup-ns-solo" in first["unschedulable"]
    assert "didn't match Pod's node affinity/selector" in first["unschedulable"]["ns/podgroup-ns-solo"]
    assert second["binds"] == {}
    assert second["podgroups"] == {"ns/pg1": "Running"}


def test_it_accepts_a_volcano_config(tmp_path: pathlib.Path) -> None:
    conf = (
        'actions: "enqueue, allocate, backfill"\n'
        "tiers:\n- plugins: [{name: gang}, {name: predicates}, {name: binpack}]\n"
    )
    proc = run(tmp_path, STATE, conf=conf)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cycles"][0]["binds"] == {"ns/p0": "n2", "ns/p1": "n2"}


@pytest.mark.parametrize(
    ("state", "needles"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
            ["document 1", "Node n1", "status.allocatable.cpu", "invalid quantity 'lots'"],
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\n"
            "metadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {memory: 1Gb}}}]}\n",
            ["document 2", "Pod default/p", "spec.containers[0].resources.requests.memory"],
        ),
        ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", ["document 1", "Service s", "unsupported object"]),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: two}\n",
            ["PodGroup default/pg", "spec.minMember", "expected an integer"],
        ),
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nstatus: {state: Sleeping}\n",
            ["Queue q", "status.state"],
        ),
        ("kind: [\n", ["invalid YAML"]),
        ("apiVersion: v1\nkind: Node\nmetadata: {labels: {}}\n", ["document 1", "metadata.name", "required"]),
    ],
)
def test_bad_input_exits_2_naming_document_object_and_field(
    tmp_path: pathlib.Path, state: str, needles: list[str]
) -> None:
    proc = run(tmp_path, state)
    assert proc.returncode == 2
    assert proc.stdout == ""
    for needle in needles:
        assert needle in proc.stderr


def test_bad_config_exits_2_with_its_path(tmp_path: pathlib.Path) -> None:
    proc = run(tmp_path, STATE, conf='actions: "allocate"\ntiers: [{plugins: [{name: nope}]}]\n')
    assert proc.returncode == 2
    assert "tiers[0].plugins[0].name" in proc.stderr


def test_missing_file_exits_2(tmp_path: pathlib.Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(tmp_path / "none.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2
    assert "none.yaml" in proc.stderr
