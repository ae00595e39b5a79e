"""task-topology: Volcano's Test_readTopologyFromPgAnnotations as a table, and allocate scenarios of ours
(Volcano has no session test of the plugin): affine tasks share a node, a self-anti-affine task spreads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler import parse_config, run_cycle
from scheduler.plugins.task_topology import Topology, read_topology
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot, make_task

ROLES = {"ps", "worker", "chief", "evaluator"}
SOME = {"ps-some", "worker-another-some", "chief-kk", "evaluator-tt"}
#: Test_readTopologyFromPgAnnotations' case descriptions, in the order of CASES.
NAMES = [
    "correct annotation",
    "correct annotation with tasks whose names contain `-`",
    "nil annotation",
    "invalid annotation",
    "invalid task name",
    "duplicate task name",
    "redundant punctuations",
]
CASES = [
    (
        ROLES,
        "ps,worker;ps,chief",
        "ps;worker,chief",
        "ps,worker,chief,evaluator",
        Topology(
            [["ps", "worker"], ["ps", "chief"]], [["ps"], ["worker", "chief"]], ["ps", "worker", "chief", "evaluator"]
        ),
        False,
    ),
    (
        SOME,
        "ps-some,worker-another-some;ps-some,chief-kk",
        "ps-some;worker-another-some,chief-kk",
        "ps-some,worker-another-some,chief-kk,evaluator-tt",
        Topology(
            [["ps-some", "worker-another-some"], ["ps-some", "chief-kk"]],
            [["ps-some"], ["worker-another-some", "chief-kk"]],
            ["ps-some", "worker-another-some", "chief-kk", "evaluator-tt"],
        ),
        False,
    ),
    (ROLES, None, None, None, None, False),
    (ROLES, "$%GF$^trtqwrg^", "ps;worker,chief;#@FGEW^vfa897bgs;;", "ps,worker,chief,evaluator,,,", None, True),
    ({"ps", "worker"}, "ps,worker", "ps", "ps,worker,chief", None, True),
    ({"ps", "worker"}, "ps,worker", "ps,ps", "ps,worker", None, True),
    (
        ROLES,
        "ps,worker;ps,,chief,;",
        "ps;worker,chief;;;",
        "ps,worker,chief,evaluator,,,",
        Topology(
            [["ps", "worker"], ["ps", "", "chief", ""], [""]],
            [["ps"], ["worker", "chief"], [""], [""], [""]],
            ["ps", "worker", "chief", "evaluator", "", "", ""],
        ),
        False,
    ),
]


@pytest.mark.parametrize(
    ("roles", "aff", "anti", "order", "want", "error"),
    CASES,
    ids=[f"Test_readTopologyFromPgAnnotations:{n}" for n in NAMES],
)
def test_read_topology_from_pg_annotations(
    roles: set[str], aff: str | None, anti: str | None, order: str | None, want: Topology | None, error: bool
) -> None:
    got, problem = read_topology(roles, aff, anti, order)
    assert bool(problem) is error
    assert got == want


CONF = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: task-topology, arguments: {task-topology.weight: 10}}]
- plugins: [{name: predicates}, {name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0}}]
"""


def _job(annotations: dict[str, str], roles: tuple[str, ...] = ("ps", "ps", "worker", "worker")) -> Snapshot:
    """Four 8-CPU nodes; a job of 2-CPU pods of the given roles (default 2 ps and 2 workers)."""
    tasks = [make_task(f"{role}-{i}", cpu="2", memory="1Gi", role=role) for i, role in enumerate(roles)]
    spec = make_job("tf", min_available=len(tasks), tasks=tasks)
    job = replace(
        spec.job,
        task_affinity=annotations.get("affinity"),
        task_anti_affinity=annotations.get("anti"),
        task_order=annotations.get("order"),
    )
    return replace(make_snapshot([make_node(f"n{i}", cpu="8", memory="32Gi") for i in range(4)], [spec]), jobs=(job,))


SPREADING = CONF.replace(
    "{name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0}}", "{name: nodeorder}"
)


def test_affine_tasks_share_a_node() -> None:
    """nodeorder's least-requested score spreads the pods; ps-worker affinity keeps them together."""
    config = parse_config(SPREADING)
    binds = run_cycle(_job({"affinity": "ps,worker", "order": "ps,worker"}), config).binds
    assert len(binds) == 4
    assert len(set(binds.values())) == 1, binds
    plain = run_cycle(_job({}), config).binds
    assert len(set(plain.values())) > 1, plain


def test_a_self_anti_affine_task_spreads() -> None:
    """Workers with self anti-affinity get a bucket each, and a node holding a worker scores lower for
    the next one: the workers spread (without the annotation they pack on one node, nodeorder's
    least-requested weight being 0)."""
    config = parse_config(CONF)
    spread = run_cycle(_job({"anti": "worker"}, roles=("worker",) * 3), config).binds
    assert len(set(spread.values())) == 3, spread
    packed = run_cycle(_job({}, roles=("worker",) * 3), config).binds
    assert len(set(packed.values())) == 1, packed


def test_a_job_naming_a_task_it_lacks_is_left_alone() -> None:
    config = parse_config(CONF)
    plain = run_cycle(_job({}), config).binds
    assert run_cycle(_job({"affinity": "ps,chief"}), config).binds == plain
