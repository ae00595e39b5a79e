"""Hierarchical drf (``enableHierarchy: true``): config, the annotation tree, queue order, reclaim.

Behaviour follows Volcano's drf plugin in hierarchy mode and its design note (docs/design/hdrf.md):
the "rescaling" and "blocking nodes" examples, share/weight comparison along the path, saturated
nodes last, and a reclaimable vote that judges every reclaimee on its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError, dump_config
from scheduler.model import JobPhase, Queue
from scheduler.registry import default_registry
from scheduler.result import CycleResult
from scheduler.session import Session
from scheduler.testing import JobSpec, Scenario, make_job, make_node, make_queue, make_snapshot

ALLOCATE = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf, enableHierarchy: true}, {name: predicates}]
"""
# drf sits in the first tier with gang: the reclaimable vote is decided by the first tier that
# returns victims (intersection within a tier), so in a later tier it would never be asked.
RECLAIM = """
actions: "allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: drf, enableHierarchy: true}]
- plugins: [{name: predicates}]
"""


def hq(name: str, hierarchy: str, weights: str = "") -> Queue:
    return make_queue(name, hierarchy=hierarchy, hierarchy_weights=weights)


def elastic(
    name: str, queue: str, n: int, cpu: str = "1", memory: str = "0", running: int = 0, node: str = "n"
) -> JobSpec:
    """A job of ``n`` identical pods, ``running`` of them already on ``node``; gang of one."""
    phase = JobPhase.RUNNING if running else JobPhase.INQUEUE
    return make_job(name, queue, 1, n, cpu, memory, running_on=[node] * running, phase=phase)


def open_session(
    nodes: Sequence[Any], jobs: Sequence[JobSpec], queues: Sequence[Queue], conf: str = ALLOCATE
) -> Session:
    return Session(make_snapshot(nodes, jobs, queues), parse_config(conf), default_registry())


def hdrf_of(ssn: Session) -> Any:
    tree = ssn.plugin("drf").state.hdrf
    assert tree is not None
    return tree


def per_job(results: Sequence[CycleResult]) -> Counter[str]:
    """Bound pods per PodGroup name (pods are ``<job>-<i>``)."""
    out: Counter[str] = Counter()
    for r in results:
        for pod in r.binds:
            out[pod.split("/")[1].rsplit("-", 1)[0]] += 1
    return out


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tier",
    [
        "[{name: drf, enableHierarchy: true}, {name: proportion}]",
        "[{name: proportion}, {name: drf, enableHierarchy: true}]",
    ],
    ids=["drf-first", "proportion-first"],
)
def test_hierarchy_with_proportion_in_one_tier_is_a_conflict(tier: str) -> None:
    with pytest.raises(ConfigError, match="proportion and drf with hierarchy enabled conflicts"):
        parse_config(f'actions: "allocate"\ntiers:\n- plugins: {tier}\n')


@pytest.mark.parametrize(
    "conf",
    [
        # Volcano checks the conflict per tier only
        'actions: "allocate"\ntiers:\n'
        "- plugins: [{name: drf, enableHierarchy: true}]\n"
        "- plugins: [{name: proportion}]\n",
        # without hierarchy drf and proportion go together (the default config)
        'actions: "allocate"\ntiers:\n- plugins: [{name: drf, enableHierarchy: false}, {name: proportion}]\n',
        # capacity is not proportion
        'actions: "allocate"\ntiers:\n- plugins: [{name: drf, enableHierarchy: true}, {name: capacity}]\n',
    ],
    ids=["other-tier", "hierarchy-off", "with-capacity"],
)
def test_accepted_combinations(conf: str) -> None:
    parse_config(conf)


def test_enable_hierarchy_only_on_hierarchical_plugins() -> None:
    with pytest.raises(ConfigError, match="no hierarchical mode"):
        parse_config('actions: "allocate"\ntiers:\n- plugins: [{name: gang, enableHierarchy: true}]\n')
    with pytest.raises(ConfigError):
        parse_config('actions: "allocate"\ntiers:\n- plugins: [{name: drf, enableHierarchy: "yes"}]\n')


def test_enable_hierarchy_round_trips() -> None:
    cfg = parse_config(ALLOCATE)
    drf = next(p for t in cfg.tiers for p in t.plugins if p.name == "drf")
    assert drf.hierarchy
    again = parse_config(dump_config(cfg))
    assert next(p for t in again.tiers for p in t.plugins if p.name == "drf").hierarchy


def test_flat_drf_has_no_tree() -> None:
    ssn = open_session(
        [make_node("n")],
        [elastic("a", "qa", 1)],
        [hq("qa", "root/a")],
        conf=ALLOCATE.replace(", enableHierarchy: true", ""),
    )
    drf: Any = ssn.plugin("drf")
    assert drf.state.hdrf is None
    assert drf.queue_order(ssn.queues["qa"], ssn.queues["qa"]) == 0
    assert drf.reclaimable(ssn.tasks["default/a-0"], []) is None


# -- the annotation tree ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hierarchy", "weights", "path", "expected_weights"),
    [
        ("root/eng/prod", "1/2/8", ["eng", "prod"], [2.0, 8.0]),
        ("root/sci", "100/50", ["sci"], [50.0]),
        ("root/a", "1/0.5", ["a"], [1.0]),  # weights below 1 count as 1
        ("root/a", "1/x", ["a"], [1.0]),  # unparsable ⇒ 0 ⇒ 1
        ("root/a/b", "1", ["a", "b"], [1.0, 1.0]),  # too few weights: 1 (Volcano would panic)
        ("top/a", "1/3", ["a"], [3.0]),  # the first element is the root whatever its name
        ("root", "1", [], []),
        ("", "", [], []),  # no annotation: the queue's jobs hang directly under the root
    ],
)
def test_paths_and_weights(hierarchy: str, weights: str, path: list[str], expected_weights: list[float]) -> None:
    ssn = open_session([make_node("n")], [elastic("a", "q", 1)], [hq("q", hierarchy, weights)])
    tree = hdrf_of(ssn)
    assert tree.paths["q"] == path
    assert tree.weights["q"] == expected_weights
    node = tree.root
    for name in path:
        node = node.children[name]
    assert "job:default/a" in node.children


def test_rescaling_example_from_the_design_note() -> None:
    """root → sci (pg1: cpu+mem) and eng → {dev (cpu only), prod (memory only)}.

    eng's children are scaled to the smaller dominant share before being summed, so eng
    holding 5 cpu in dev and 5 memory in prod has share 0.5, not 1.0 — the same as sci."""
    node = make_node("n", cpu="10", memory="10Gi", pods=1000)
    queues = [
        hq("root-sci", "root/sci", "100/50"),
        hq("eng-dev", "root/eng/dev", "100/50/50"),
        hq("eng-prod", "root/eng/prod", "100/50/50"),
    ]
    jobs = [
        elastic("pg1", "root-sci", 10, "1", "1Gi", running=5),
        elastic("pg21", "eng-dev", 10, "1", "0", running=5),
        elastic("pg22", "eng-prod", 10, "0", "1Gi", running=5),
    ]
    ssn = open_session([node], jobs, queues)
    tree = hdrf_of(ssn)
    root = tree._tree()
    sci, eng = root.children["sci"], root.children["eng"]
    assert eng.children["dev"].share == pytest.approx(0.5)
    assert eng.children["prod"].share == pytest.approx(0.5)
    assert eng.share == pytest.approx(0.5)
    assert sci.share == pytest.approx(0.5)
    # the whole cluster is used: cpu and memory are no longer demanding, every job is saturated
    assert root.saturated
    assert sci.saturated
    assert eng.saturated
    assert tree.compare_queues("root-sci", "eng-dev") == 0


def test_rescaling_keeps_the_parent_at_its_smallest_child() -> None:
    """dev runs 6 cpu, prod 4 memory, sci 4+4: eng is scaled to prod's 0.4 and ties with sci;
    once dev's extra task is counted sci still does not fall behind."""
    node = make_node("n", cpu="20", memory="20Gi", pods=1000)
    queues = [hq("sci", "root/sci"), hq("dev", "root/eng/dev"), hq("prod", "root/eng/prod")]
    jobs = [
        elastic("pg1", "sci", 10, "1", "1Gi", running=4),
        elastic("pg21", "dev", 10, "1", "0", running=6),
        elastic("pg22", "prod", 10, "0", "1Gi", running=4),
    ]
    tree = hdrf_of(open_session([node], jobs, queues))
    root = tree._tree()
    eng = root.children["eng"]
    # dev (0.3) is scaled down to prod's 0.2: eng = (4 cpu, 4Gi) → 0.2
    assert eng.allocated[0] == pytest.approx(4000)
    assert eng.share == pytest.approx(0.2)
    assert root.children["sci"].share == pytest.approx(0.2)
    assert tree.compare_queues("sci", "dev") == 0
    # inside eng the less served child goes first
    assert tree.compare_queues("prod", "dev") < 0


def test_share_is_divided_by_the_weight_at_each_level() -> None:
    node = make_node("n", cpu="10", memory="100Gi", pods=1000)
    queues = [hq("a", "root/a", "1/1"), hq("b", "root/b", "1/2")]
    jobs = [elastic("ja", "a", 10, running=3), elastic("jb", "b", 10, running=5)]
    tree = hdrf_of(open_session([node], jobs, queues))
    # a: 0.3 / 1 > b: 0.5 / 2
    assert tree.compare_queues("b", "a") < 0
    assert tree.compare_queues("a", "b") > 0


def test_tie_at_a_level_descends_to_the_next() -> None:
    node = make_node("n", cpu="10", memory="100Gi", pods=1000)
    queues = [hq("x1", "root/x/one"), hq("x2", "root/x/two"), hq("y", "root/y")]
    jobs = [elastic("j1", "x1", 10, running=1), elastic("j2", "x2", 10, running=2), elastic("jy", "y", 10, running=4)]
    tree = hdrf_of(open_session([node], jobs, queues))
    # same parent x: compared one level down
    assert tree.compare_queues("x1", "x2") < 0
    # x (scaled: 2 x 0.1 → 0.2) before y (0.4), for both of x's children
    assert tree.compare_queues("x2", "y") < 0
    assert tree.compare_queues("x1", "y") < 0


def test_saturated_queue_goes_last() -> None:
    """A job holding all it asked for is saturated; its queue ranks after a demanding one even
    with a lower share."""
    node = make_node("n", cpu="10", memory="100Gi", pods=1000)
    queues = [hq("small", "root/small"), hq("big", "root/big")]
    jobs = [elastic("s", "small", 1, running=1), elastic("b", "big", 10, running=4)]
    tree = hdrf_of(open_session([node], jobs, queues))
    root = tree._tree()
    assert root.children["small"].saturated
    assert not root.children["big"].saturated
    assert tree.compare_queues("big", "small") < 0


def test_fully_used_resource_saturates_only_jobs_holding_it() -> None:
    """Memory is fully allocated, so it is not demanding: a job holding memory and asking for
    more is saturated. A job holding nothing is not (Volcano only looks at held resources)."""
    node = make_node("n", cpu="10", memory="4Gi", pods=1000)
    queues = [hq("m", "root/m"), hq("e", "root/e")]
    jobs = [elastic("mem", "m", 8, "1", "1Gi", running=4), elastic("empty", "e", 2, "1", "1Gi")]
    tree = hdrf_of(open_session([node], jobs, queues))
    root = tree._tree()
    assert root.children["m"].saturated
    assert not root.children["e"].children["job:default/empty"].saturated
    assert tree.compare_queues("e", "m") < 0


def test_unannotated_queues_compare_equal() -> None:
    """Without annotations the jobs hang directly under the root; the path comparison then has
    nothing to compare and queue order falls through to the next plugin / creation order."""
    node = make_node("n", cpu="10", memory="100Gi", pods=1000)
    queues = [make_queue("plain"), hq("a", "root/a")]
    jobs = [elastic("p", "plain", 10, running=6), elastic("ja", "a", 10, running=1)]
    tree = hdrf_of(open_session([node], jobs, queues))
    assert "job:default/p" in tree._tree().children
    assert tree.compare_queues("plain", "a") == 0
    assert tree.compare_queues("a", "plain") == 0


def test_allocation_events_update_the_tree() -> None:
    node = make_node("n", cpu="10", memory="100Gi", pods=1000)
    queues = [hq("a", "root/a"), hq("b", "root/b")]
    jobs = [elastic("ja", "a", 10, running=2), elastic("jb", "b", 10, running=1)]
    ssn = open_session([node], jobs, queues)
    tree = hdrf_of(ssn)
    assert tree.compare_queues("b", "a") < 0
    from scheduler.statement import Statement

    stmt = Statement(ssn, "test")
    for i in (1, 2):
        stmt.allocate(ssn.tasks[f"default/jb-{i}"], 0)
    assert tree.compare_queues("a", "b") < 0
    stmt.discard()
    assert tree.compare_queues("b", "a") < 0


# -- reclaimable -----------------------------------------------------------------------------


def test_reclaimable_judges_each_reclaimee_on_its_own() -> None:
    """a holds 3 of 4 cpu, b nothing. Taking one pod from a leaves it at 0.5 > b's 0.25, for
    either candidate: Volcano puts each reclaimee back before judging the next one."""
    node = make_node("n", cpu="4", memory="100Gi", pods=1000)
    queues = [hq("a", "root/a"), hq("b", "root/b")]
    jobs = [elastic("ja", "a", 3, running=3), elastic("jb", "b", 2)]
    ssn = open_session([node], jobs, queues)
    tree = hdrf_of(ssn)
    cands = [ssn.tasks["default/ja-0"], ssn.tasks["default/ja-1"]]
    victims = tree.reclaimable(ssn.tasks["default/jb-0"], cands)
    assert [t.key for t in victims] == ["default/ja-0", "default/ja-1"]


def test_reclaimable_needs_the_reclaimer_strictly_first() -> None:
    """a holds 2, b holds 1 of 4 cpu: b + 1 = 0.5 and a - 1 = 0.25 ⇒ no victim; equal shares
    (a holding 3, b + 1 = 0.5 vs a - 1 = 0.5) ⇒ no victim either."""
    node = make_node("n", cpu="4", memory="100Gi", pods=1000)
    queues = [hq("a", "root/a"), hq("b", "root/b")]
    for held_a in (2, 3):
        jobs = [elastic("ja", "a", held_a, running=held_a), elastic("jb", "b", 3, running=1)]
        ssn = open_session([node], jobs, queues)
        tree = hdrf_of(ssn)
        assert tree.reclaimable(ssn.tasks["default/jb-1"], [ssn.tasks["default/ja-0"]]) == []


def test_reclaimable_uses_weights() -> None:
    """b has weight 3: b + 1 = 0.5 / 3 is still below a - 1 = 0.25, so a loses a pod."""
    node = make_node("n", cpu="4", memory="100Gi", pods=1000)
    queues = [hq("a", "root/a", "1/1"), hq("b", "root/b", "1/3")]
    jobs = [elastic("ja", "a", 2, running=2), elastic("jb", "b", 3, running=1)]
    ssn = open_session([node], jobs, queues)
    tree = hdrf_of(ssn)
    victims = tree.reclaimable(ssn.tasks["default/jb-1"], [ssn.tasks["default/ja-0"]])
    assert [t.key for t in victims] == ["default/ja-0"]


# -- whole cycles ----------------------------------------------------------------------------


def test_blocking_nodes_example_from_the_design_note() -> None:
    """Volcano's "blocking nodes" example: pg1, pg2, pg3/pg31 want cpu, pg3/pg32 and pg4 want
    memory. Once cpu runs out the cpu jobs are saturated, so memory is shared between pg32 and
    pg4 instead of pg3's saturated cpu child blocking pg4 — 15 and 15."""
    node = make_node("n", cpu="30", memory="30Gi", pods=500)
    queues = [
        hq("root-pg1", "root/pg1", "100/25"),
        hq("root-pg2", "root/pg2", "100/25"),
        hq("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
        hq("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
        hq("root-pg4", "root/pg4", "100/25"),
    ]
    jobs = [
        make_job("pg1", "root-pg1", 0, 30, "1", "0"),
        make_job("pg2", "root-pg2", 0, 30, "1", "0"),
        make_job("pg31", "root-pg3-pg31", 0, 30, "1", "0"),
        make_job("pg32", "root-pg3-pg32", 0, 30, "0", "1Gi"),
        make_job("pg4", "root-pg4", 0, 30, "0", "1Gi"),
    ]
    result = run_cycle(make_snapshot([node], jobs, queues), parse_config(ALLOCATE))
    assert per_job([result]) == {"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}


SCENARIOS = [
    (
        Scenario(
            "equal weights split the cluster evenly",
            nodes=[make_node("n", cpu="8", memory="100Gi", pods=1000)],
            jobs=[make_job("ja", "a", 0, 8, "1", "0"), make_job("jb", "b", 0, 8, "1", "0")],
            queues=[hq("a", "root/a", "1/1"), hq("b", "root/b", "1/1")],
            config=ALLOCATE,
        ),
        {"ja": 4, "jb": 4},
    ),
    (
        Scenario(
            "weights 1:3 give 2 and 6",
            nodes=[make_node("n", cpu="8", memory="100Gi", pods=1000)],
            jobs=[make_job("ja", "a", 0, 8, "1", "0"), make_job("jb", "b", 0, 8, "1", "0")],
            queues=[hq("a", "root/a", "1/1"), hq("b", "root/b", "1/3")],
            config=ALLOCATE,
        ),
        {"ja": 2, "jb": 6},
    ),
    (
        Scenario(
            "already running pods count: the lagging queue catches up first",
            nodes=[make_node("n", cpu="8", memory="100Gi", pods=1000)],
            jobs=[
                elastic("ja", "a", 8, running=4),
                make_job("jb", "b", 0, 8, "1", "0"),
            ],
            queues=[hq("a", "root/a"), hq("b", "root/b")],
            config=ALLOCATE,
        ),
        {"jb": 4},
    ),
    (
        Scenario(
            "a saturated queue does not hold the other back",
            nodes=[make_node("n", cpu="8", memory="100Gi", pods=1000)],
            jobs=[make_job("ja", "a", 0, 1, "1", "0"), make_job("jb", "b", 0, 8, "1", "0")],
            queues=[hq("a", "root/a", "1/8"), hq("b", "root/b", "1/1")],
            config=ALLOCATE,
        ),
        {"ja": 1, "jb": 7},
    ),
    (
        Scenario(
            "reclaim takes one pod back for a gang of one",
            nodes=[make_node("n", cpu="4", memory="100Gi", pods=1000)],
            jobs=[elastic("ja", "a", 4, running=4), make_job("jb", "b", 1, 4, "1", "0")],
            queues=[hq("a", "root/a"), hq("b", "root/b")],
            config=RECLAIM,
            evictions=frozenset({"default/ja-2"}),
            pipelined={"default/jb-0": "n"},
        ),
        {},
    ),
    (
        # the pipelined first pod counts for b (as Volcano's allocate event does): the second
        # would leave a (3 - 1 = 0.5) level with b (1 + 1 = 0.5), so the gang of two fails
        Scenario(
            "reclaim stops where the shares would meet",
            nodes=[make_node("n", cpu="4", memory="100Gi", pods=1000)],
            jobs=[elastic("ja", "a", 4, running=4), make_job("jb", "b", 2, 4, "1", "0")],
            queues=[hq("a", "root/a"), hq("b", "root/b")],
            config=RECLAIM,
            evictions=frozenset(),
            pipelined={},
        ),
        {},
    ),
    (
        Scenario(
            "a heavier queue reclaims further",
            nodes=[make_node("n", cpu="4", memory="100Gi", pods=1000)],
            jobs=[elastic("ja", "a", 4, running=4), make_job("jb", "b", 2, 4, "1", "0")],
            queues=[hq("a", "root/a", "1/1"), hq("b", "root/b", "1/3")],
            config=RECLAIM,
            evictions=frozenset({"default/ja-2", "default/ja-1"}),
            pipelined={"default/jb-0": "n", "default/jb-1": "n"},
        ),
        {},
    ),
    (
        Scenario(
            "no reclaim between queues already at their fair share",
            nodes=[make_node("n", cpu="4", memory="100Gi", pods=1000)],
            jobs=[elastic("ja", "a", 2, running=2), elastic("jb", "b", 4, running=2)],
            queues=[hq("a", "root/a"), hq("b", "root/b")],
            config=RECLAIM,
            evictions=frozenset(),
        ),
        {},
    ),
]


@pytest.mark.parametrize(("scenario", "expected"), SCENARIOS, ids=[s.id for s, _ in SCENARIOS])
def test_scenarios(scenario: Scenario, expected: dict[str, int]) -> None:
    assert per_job(scenario.check()) == expected
