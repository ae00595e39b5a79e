"""``python -m scheduler simulate --explain-*``: plugin hooks' answers on an opened session.

Volcano's plugin tests that check a hook's answer directly (node scores, predicate codes, HyperNode
scores) are reproduced through the command line here, from the same data the library path checks
(``volcano_cases/*.yaml``, ``expect.scores`` / ``predicates`` / ``hypernode_scores``): the case's
objects are written out as a state file and its configuration as a ``--conf`` file. The cases whose Go
test sets a task's ``JobAllocatedHyperNode`` by hand (network-topology-aware's node scores, a
``volcano.sh/job-allocated-hypernode`` annotation on the PodGroup in the data) pass that HyperNode as
``--spans`` (what allocate tells the plugin while it tries the job inside it). Job order, enqueue and
victims are checked against scenarios of ours as well.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.config import dump_config
from tests.scheduler.volcano_harness import (
    ALLOCATED_HYPERNODE,
    NOW,
    VolcanoCase,
    config_of,
    load_cases,
    manifests_of,
)

HOOK_CASES = [c for c in load_cases() if {"scores", "predicates", "hypernode_scores"} & set(c.data["expect"])]


def _spans(case: VolcanoCase, task: str) -> list[str]:
    """``--spans`` for a pod whose PodGroup the Go test gave a ``JobAllocatedHyperNode`` ([] otherwise)."""
    ns, pod = task.split("/")
    group = next(p.get("pg") for p in case.data["pods"] if p.get("ns", "default") == ns and p["name"] == pod)
    for pg in case.data.get("podgroups", ()):
        spans = (pg.get("annotations") or {}).get(ALLOCATED_HYPERNODE)
        if pg["name"] == group and pg.get("ns", "default") == ns and spans:
            return ["--spans", spans]
    return []


def _run(tmp_path: Path, case_docs: list[dict[str, Any]], conf: str, *flags: str) -> Any:
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump_all(case_docs), encoding="utf-8")
    conf_file = tmp_path / "conf.yaml"
    conf_file.write_text(conf, encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["simulate", str(state), "--conf", str(conf_file), *flags])
    assert code == 0
    return json.loads(out.getvalue())["explain"]


VICTIM_CASES = [c for c in load_cases() if "victims" in c.data["expect"]]


@pytest.mark.parametrize("case", VICTIM_CASES, ids=lambda c: c.id)
def test_volcanos_victim_cases_through_simulate_explain(case: VolcanoCase, tmp_path: Path) -> None:
    """ssn.Preemptable / ssn.Reclaimable cases (expect.victims) with the session's clock as ``--now``."""
    job = case.data["victims_of"]
    got = _run(
        tmp_path, manifests_of(case.data), dump_config(config_of(case)), "--explain-victims", job, "--now", str(NOW)
    )
    for pod, want in case.data["expect"]["victims"].items():
        for vote, names in want.items():
            assert got["victims"][pod][vote] == sorted(names), (pod, vote)


TASK_CASES = [c for c in load_cases() if "victim_task_count" in c.data["expect"]]


@pytest.mark.parametrize("case", TASK_CASES, ids=lambda c: c.id)
def test_volcanos_victim_task_cases_through_simulate_explain(case: VolcanoCase, tmp_path: Path) -> None:
    """ssn.VictimTasks cases (expect.victim_task_count) with the session's clock as ``--now``."""
    got = _run(
        tmp_path, manifests_of(case.data), dump_config(config_of(case)), "--explain-victim-tasks", "--now", str(NOW)
    )
    assert len(got["victim_tasks"]) == case.data["expect"]["victim_task_count"]


def test_every_one_of_volcanos_hook_cases_goes_through_the_command_line() -> None:
    kinds = {k for c in HOOK_CASES for k in ("scores", "predicates", "hypernode_scores") if k in c.data["expect"]}
    assert kinds == {"scores", "predicates", "hypernode_scores"}
    spanning = [
        c for c in HOOK_CASES if any(ALLOCATED_HYPERNODE in (g.get("annotations") or {}) for g in c.data["podgroups"])
    ]
    assert len(spanning) == 13  # network-topology-aware's node scores with a JobAllocatedHyperNode
    assert len(HOOK_CASES) >= 50


@pytest.mark.parametrize("case", HOOK_CASES, ids=lambda c: c.id)
def test_volcanos_hook_cases_through_simulate_explain(case: VolcanoCase, tmp_path: Path) -> None:
    expect = case.data["expect"]
    docs = manifests_of(case.data)
    conf = dump_config(config_of(case))
    clock = ("--now", str(NOW))  # the library path's session clock
    tolerance = float(case.data.get("score_tolerance", 1e-6))
    problems: list[str] = []
    for key, want in (expect.get("scores") or {}).items():
        nodes = case.data.get("score_nodes")
        flags = ["--explain-node-scores", "--task", key, *(["--nodes", ",".join(nodes)] if nodes else [])]
        flags += _spans(case, key)
        got = _run(tmp_path, docs, conf, *flags, *clock)["node_scores"][key]
        problems += [
            f"{key} on {n}: want {s}, got {got[n]}" for n, s in want.items() if abs(got[n] - float(s)) > tolerance
        ]
    for key, want in (expect.get("predicates") or {}).items():
        got = _run(tmp_path, docs, conf, "--explain-predicates", "--task", key, *clock)["predicates"][key]
        problems += [f"{key} on {n}: want {c}, got {got[n]}" for n, c in want.items() if got[n]["code"] != c]
    for job, want in (expect.get("hypernode_scores") or {}).items():
        got = _run(tmp_path, docs, conf, "--explain-hypernodes", job, *clock)["hypernodes"]["scores"]
        problems += [
            f"{job} on {n}: want {s}, got {got.get(n)}" for n, s in want.items() if abs(got[n] - float(s)) > tolerance
        ]
    assert not problems, f"{case.id}:\n" + "\n".join(problems)


NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n"
    "status: {{allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: '10'}}}}"
)
QUEUE = (
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\n"
    "spec: {{weight: {weight}, reclaimable: true}}"
)
PG = (
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: {name}, namespace: ns}}\n"
    "spec: {{minMember: 1, queue: {queue}, priorityClassName: {pc}, minResources: {{cpu: '{cpu}'}}}}\n"
    "status: {{phase: {phase}}}"
)
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns,"
    " annotations: {{scheduling.k8s.io/group-name: {pg}}}}}\n"
    "spec: {{schedulerName: volcano, priorityClassName: {pc}, nodeName: '{node}',"
    " containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}\n"
    "status: {{phase: {phase}}}"
)
CLASSES = (
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 100\n---\n"
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 1"
)
CONF = """
actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def _cluster() -> list[dict[str, Any]]:
    """Two 4-CPU nodes full of low-priority pods of queues q1 (weight 3) and q2 (weight 1, so above its
    deserved 2 CPU); in q1 a high-priority job asking 4 CPU (Inqueue) and a Pending one asking 100 CPU
    (never enqueueable)."""
    text = [
        CLASSES,
        NODE.format(name="n1", cpu=4),
        NODE.format(name="n2", cpu=4),
        QUEUE.format(name="q1", weight=3),
        QUEUE.format(name="q2", weight=1),
        PG.format(name="low1", queue="q1", pc="low", cpu=4, phase="Running"),
        POD.format(name="low1-0", pg="low1", pc="low", node="n1", cpu=4, phase="Running"),
        PG.format(name="low2", queue="q2", pc="low", cpu=4, phase="Running"),
        POD.format(name="low2-0", pg="low2", pc="low", node="n2", cpu=4, phase="Running"),
        PG.format(name="high", queue="q1", pc="high", cpu=4, phase="Inqueue"),
        POD.format(name="high-0", pg="high", pc="high", node="", cpu=4, phase="Pending"),
        PG.format(name="huge", queue="q1", pc="high", cpu=100, phase="Pending"),
        POD.format(name="huge-0", pg="huge", pc="high", node="", cpu=100, phase="Pending"),
    ]
    return [yaml.safe_load(t) for t in "\n---\n".join(text).split("\n---\n")]


def test_explain_job_order_enqueue_and_victims(tmp_path: Path) -> None:
    got = _run(tmp_path, _cluster(), CONF, "--explain-job-order", "--explain-enqueue", "--explain-victims", "ns/high")
    assert got["job_order"][:2] == ["ns/high", "ns/huge"]  # priority first, then creation order
    assert got["enqueue"] == {"ns/huge": False}  # overcommit: 100 CPU never fits 8 x 1.2
    # priority lets the high pod preempt the low pod of its own queue; proportion lets it reclaim
    # the pod of q2, which holds more than it deserves
    assert got["victims"] == {"ns/high-0": {"preemptable": ["ns/low1-0"], "reclaimable": ["ns/low2-0"]}}


def test_explain_names_what_it_cannot_answer(tmp_path: Path) -> None:
    state = tmp_path / "s.yaml"
    state.write_text(yaml.safe_dump_all(_cluster()), encoding="utf-8")
    assert main(["simulate", str(state), "--explain-victims", "ns/nothing"]) == 2
    assert main(["simulate", str(state), "--explain-node-scores", "--spans", "no-such-hypernode"]) == 2
    assert main(["simulate", str(state), "--spans", "r1"]) == 2  # only node scores read it


def test_explain_node_scores_see_the_hypernode_the_job_spans(tmp_path: Path) -> None:
    """A topology job with a pod on rack r1: network-topology-aware scores r1's other node highest."""
    docs = []
    for rack in ("r1", "r2"):
        for i in (1, 2):
            docs.append(yaml.safe_load(NODE.format(name=f"{rack}-n{i}", cpu=4)))
        docs.append(
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": rack},
                "spec": {
                    "tier": 1,
                    "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^{rack}-"}}}],
                },
            }
        )
    docs.append(yaml.safe_load(QUEUE.format(name="q1", weight=1)))
    pg = yaml.safe_load(PG.format(name="g", queue="q1", pc="low", cpu=2, phase="Running"))
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    docs += [yaml.safe_load(c) for c in CLASSES.split("\n---\n")]
    docs.append(pg)
    docs.append(yaml.safe_load(POD.format(name="g-0", pg="g", pc="low", node="r1-n1", cpu=1, phase="Running")))
    docs.append(yaml.safe_load(POD.format(name="g-1", pg="g", pc="low", node="", cpu=1, phase="Pending")))
    conf = "actions: allocate\ntiers: [{plugins: [{name: network-topology-aware}]}]\n"
    got = _run(tmp_path, docs, conf, "--explain-node-scores", "--task", "ns/g-1")["node_scores"]["ns/g-1"]
    assert got["r1-n2"] > got["r2-n1"]
