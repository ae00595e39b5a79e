"""The enqueuegate plugin: a job whose pods can never fit any node is not admitted and holds no admission room."""

from __future__ import annotations

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import DEFAULT_CONFIG, PRODUCT_CONFIG_YAML
from scheduler.model import (
    JobPhase,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Task,
    TaskStatus,
    Toleration,
)
from scheduler.testing import JobSpec, Scenario, make_job, make_node, make_queue, make_snapshot, make_task

PRODUCT = parse_config(PRODUCT_CONFIG_YAML)
GATE = 'actions: "enqueue"\ntiers:\n- plugins: [{name: gang}, {name: enqueuegate}]\n'
GPU = "nvidia.com/gpu"


def _gpu_nodes(count: int = 4, gpus: int = 4) -> list[Node]:
    return [make_node(f"gpu-{i}", "32", "128Gi", **{GPU: gpus}) for i in range(count)]


def _gpu_job(name: str, pods: int, per_pod: int, creation: int = 0) -> JobSpec:
    return make_job(
        name,
        replicas=pods,
        cpu="1",
        memory="1Gi",
        phase=JobPhase.PENDING,
        min_resources="auto",
        creation=creation,
        **{GPU: per_pod},
    )


def test_the_issue_scenario_the_blocker_waits_and_the_others_are_admitted() -> None:
    # 4 nodes of 4 GPU; the blocker's one pod asks 8. Volcano (its default configuration) admits it and
    # then refuses the 12-GPU job: 8 reserved + 12 requested > 16 x 1.2. The product's configuration keeps
    # the blocker Pending with the numbers, and admits the 12-GPU job.
    nodes = _gpu_nodes()
    jobs = [_gpu_job("blocker", 1, 8, creation=0), _gpu_job("twelve", 3, 4, creation=1)]
    volcano = run_cycle(make_snapshot(nodes, jobs), DEFAULT_CONFIG)
    assert volcano.podgroups == {"default/blocker": "Inqueue"}
    assert volcano.unschedulable["default/twelve"].kind == "enqueue-rejected"

    product = run_cycle(make_snapshot(nodes, jobs), PRODUCT)
    assert product.podgroups == {"default/twelve": "Inqueue"}
    assert len(product.binds) == 3
    reason = product.unschedulable["default/blocker"]
    assert reason.kind == "never-fits"
    assert reason.plugin == "enqueuegate"
    assert "0 of the 1 pods the gang needs fit any node" in reason.message
    assert "each pod asks {'nvidia.com/gpu': 8}, the largest node it may use has {'nvidia.com/gpu': 4}" in (
        reason.message
    )
    assert reason.numbers["per_pod"][GPU] == 8
    assert reason.numbers["largest_node"] == {GPU: 4}
    assert (reason.numbers["eligible_nodes"], reason.numbers["nodes"]) == (4, 4)
    assert reason.numbers["holds"][GPU] == 8


def test_a_rejected_blocker_leaves_the_room_to_a_later_job_in_the_same_cycle() -> None:
    # Without the gate the 16-GPU job finds 8 of 19.2 admissible GPU taken by the blocker.
    nodes = _gpu_nodes()
    jobs = [_gpu_job("blocker", 1, 8, creation=0), _gpu_job("sixteen", 4, 4, creation=1)]
    assert run_cycle(make_snapshot(nodes, jobs), DEFAULT_CONFIG).unschedulable["default/sixteen"].kind == (
        "enqueue-rejected"
    )
    assert len(run_cycle(make_snapshot(nodes, jobs), PRODUCT).binds) == 4


LABELLED = [make_node("a", "8", "16Gi", labels={"zone": "a"}), make_node("b", "8", "16Gi", labels={"zone": "b"})]
TAINTED = [make_node("t", "8", "16Gi", taints=[Taint("gpu", "yes", "NoSchedule")])]
AFFINITY = (NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("c",)),)),)


def _task(name: str, cpu: str = "1", status: TaskStatus = TaskStatus.PENDING, node: str = "", role: str = "") -> Task:
    return make_task(name, "default/j", cpu, status=status, node=node, role=role)


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(
            "fits-a-node",
            nodes=LABELLED,
            jobs=[make_job("j", cpu="8", phase=JobPhase.PENDING, min_resources="auto")],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        Scenario(
            "too-big-for-every-node",
            nodes=LABELLED,
            jobs=[make_job("j", cpu="9", phase=JobPhase.PENDING, min_resources="auto")],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        Scenario(
            "selector-matches-no-node",
            nodes=LABELLED,
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto", node_selector={"zone": "c"})],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        Scenario(
            "selector-matches-one-node",
            nodes=LABELLED,
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto", node_selector={"zone": "b"})],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        Scenario(
            "required-affinity-matches-no-node",
            nodes=LABELLED,
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto", required_affinity=AFFINITY)],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        Scenario(
            "untolerated-taint",
            nodes=TAINTED,
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto")],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        Scenario(
            "tolerated-taint",
            nodes=TAINTED,
            jobs=[
                make_job(
                    "j",
                    phase=JobPhase.PENDING,
                    min_resources="auto",
                    tolerations=(Toleration("gpu", "Equal", "yes", "NoSchedule"),),
                )
            ],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        Scenario(
            "a-cordon-is-temporary",
            nodes=[make_node("c", "8", "16Gi", unschedulable=True)],
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto")],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        Scenario(
            "no-nodes-reported-yet-abstains",
            nodes=[],
            jobs=[make_job("j", phase=JobPhase.PENDING, min_resources="auto")],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        # 2 of 3 pods are enough; one pod too big for any node does not stop the gang.
        Scenario(
            "the-gang-minimum-is-reachable",
            nodes=LABELLED,
            jobs=[
                make_job(
                    "j",
                    min_available=2,
                    phase=JobPhase.PENDING,
                    min_resources={"cpu": "2"},
                    tasks=[_task("j-0"), _task("j-1"), _task("j-2", cpu="9")],
                )
            ],
            config=GATE,
            phases={"default/j": "Inqueue"},
            reasons={"default/j": "not-reached"},
        ),
        Scenario(
            "the-gang-minimum-is-not-reachable",
            nodes=LABELLED,
            jobs=[
                make_job(
                    "j",
                    min_available=3,
                    phase=JobPhase.PENDING,
                    min_resources={"cpu": "2"},
                    tasks=[_task("j-0"), _task("j-1"), _task("j-2", cpu="9")],
                )
            ],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        # minTaskMember: the ps role needs its one pod, which no node can hold.
        Scenario(
            "a-role-minimum-is-not-reachable",
            nodes=LABELLED,
            jobs=[
                make_job(
                    "j",
                    min_available=2,
                    phase=JobPhase.PENDING,
                    min_resources={"cpu": "2"},
                    min_task_member={"ps": 1, "worker": 1},
                    tasks=[
                        _task("j-w0", role="worker"),
                        _task("j-w1", role="worker"),
                        _task("j-p0", role="ps", cpu="9"),
                    ],
                )
            ],
            config=GATE,
            phases={},
            reasons={"default/j": "never-fits"},
        ),
        # Placed pods count as fitting: the node they run on exists.
        Scenario(
            "placed-pods-count",
            nodes=LABELLED,
            jobs=[
                make_job(
                    "j",
                    min_available=2,
                    phase=JobPhase.PENDING,
                    min_resources={"cpu": "1"},
                    tasks=[_task("j-0", status=TaskStatus.RUNNING, node="a"), _task("j-1"), _task("j-2", cpu="9")],
                )
            ],
            config=GATE,
            phases=None,  # Unknown: a pod runs while the gang is short
            reasons={"default/j": "not-reached"},
        ),
        # Volcano's configuration does not name the plugin: the job is admitted, as Volcano does.
        Scenario(
            "off-unless-named",
            nodes=LABELLED,
            jobs=[make_job("j", cpu="9", phase=JobPhase.PENDING, min_resources="auto")],
            queues=[make_queue("default")],
            config=DEFAULT_CONFIG,
            phases={"default/j": "Inqueue"},
        ),
    ],
    ids=lambda s: s.id,
)
def test_enqueuegate(scenario: Scenario) -> None:
    scenario.check()


def test_the_reason_names_a_selector_no_node_admits() -> None:
    job = make_job("j", phase=JobPhase.PENDING, min_resources="auto", node_selector={"zone": "c"})
    reason = run_cycle(make_snapshot(LABELLED, [job]), parse_config(GATE)).unschedulable["default/j"]
    assert "no node of 2 admits its node selector, affinity and tolerations" in reason.message
    assert reason.numbers["eligible_nodes"] == 0


def test_a_role_reason_names_the_role() -> None:
    tasks = [_task("j-w0", role="worker"), _task("j-p0", role="ps", cpu="9")]
    job = make_job(
        "j", min_available=1, phase=JobPhase.PENDING, min_resources={"cpu": "1"}, min_task_member={"ps": 1}, tasks=tasks
    )
    reason = run_cycle(make_snapshot(LABELLED, [job]), parse_config(GATE)).unschedulable["default/j"]
    assert "0 of the 1 pods role ps needs" in reason.message
    assert "task ps: each pod asks {'cpu': 9000}" in reason.message


def _template(name: str, cpu: str = "1", **scalars: str) -> Task:
    return make_task(f"j-{name}-template", "default/j", cpu, role=name, **scalars)


def test_a_podgroup_without_pods_is_judged_by_its_pod_templates() -> None:
    # Volcano creates a job's pods only after admission: the product passes the pods its controller would create.
    from dataclasses import replace

    spec = make_job("j", min_available=2, phase=JobPhase.PENDING, min_resources={"cpu": "2"}, tasks=[])
    never = replace(spec, job=replace(spec.job, pod_templates=((_template("worker", cpu="9"), 2),)))
    fits = replace(spec, job=replace(spec.job, pod_templates=((_template("worker"), 2),)))
    mixed = replace(spec, job=replace(spec.job, pod_templates=((_template("worker"), 2), (_template("big", "9"), 1))))
    gate = parse_config(GATE)
    reason = run_cycle(make_snapshot(LABELLED, [never]), gate).unschedulable["default/j"]
    assert reason.kind == "never-fits"
    assert "0 of the 2 pods the gang needs fit any node" in reason.message
    assert "task worker: each pod asks {'cpu': 9000}" in reason.message
    assert run_cycle(make_snapshot(LABELLED, [fits]), gate).podgroups == {"default/j": "Inqueue"}
    assert run_cycle(make_snapshot(LABELLED, [mixed]), gate).podgroups == {"default/j": "Inqueue"}  # 2 of 3 fit


def test_a_resource_no_node_has_can_never_fit() -> None:
    from dataclasses import replace

    spec = make_job("j", min_available=1, phase=JobPhase.PENDING, min_resources={"cpu": "1"}, tasks=[])
    job = replace(spec, job=replace(spec.job, pod_templates=((_template("worker", **{"example.com/fpga": "1"}), 1),)))
    reason = run_cycle(make_snapshot(LABELLED, [job]), parse_config(GATE)).unschedulable["default/j"]
    assert reason.kind == "never-fits"
    assert "each pod asks example.com/fpga, which no node has" in reason.message
