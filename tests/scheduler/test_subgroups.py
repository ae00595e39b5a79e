"""Sub-groups (PodGroup ``spec.subGroupPolicy``, Volcano's sub-jobs): how pods are grouped, the gang plugin's
sub-group checks, the sub-group switches, a sub-group's network topology, and allocate's sub-group search on
whole cycles. Volcano's own cases are TestAllocateWithPartitionPolicyNetworkTopology's, in
``volcano_cases/allocate_network_topology.yaml``; these are ours."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import dump_config
from scheduler.decode import load_manifests, snapshot_from_manifests
from scheduler.info import _hash_id, sub_job_id
from scheduler.model import Job, NetworkTopology
from scheduler.registry import default_registry
from scheduler.result import ReasonKind
from scheduler.session import Session
from scheduler.snapshot import Snapshot
from scheduler.topology import JobTopology, sub_job_topology

CONF = """
actions: allocate
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


def _docs(podgroup: dict[str, Any], pods: list[tuple[str, dict[str, str]]], nodes: int = 4, rack: int = 2) -> Snapshot:
    """A PodGroup ``pg`` (Inqueue) of 2-CPU pods ``(name, labels)`` on ``nodes`` 2-CPU nodes in racks of ``rack``
    (HyperNodes ``rack-<i>``, tier 1) under one spine (``spine``, tier 2)."""
    docs: list[dict[str, Any]] = []
    for i in range(nodes):
        alloc = {"cpu": "2", "memory": "8Gi", "pods": "10"}
        docs.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": alloc}}
        )
    racks = [[f"n{i}" for i in range(r, min(r + rack, nodes))] for r in range(0, nodes, rack)]
    for k, members in enumerate(racks):
        spec = {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in members]}
        docs.append(
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": f"rack-{k}"},
                "spec": spec,
            }
        )
    spine = [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"rack-{k}"}}} for k in range(len(racks))]
    docs.append(
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "spine"},
            "spec": {"tier": 2, "members": spine},
        }
    )
    pg_spec = {"queue": "default", **podgroup}
    docs.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg"},
            "spec": pg_spec,
            "status": {"phase": "Inqueue"},
        }
    )
    for name, labels in pods:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": labels, "annotations": {"scheduling.k8s.io/group-name": "pg"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"},
            }
        )
    return snapshot_from_manifests(list(enumerate(docs, start=1)))


def _session(snap: Snapshot, conf: str = CONF) -> Session:
    return Session(snap, parse_config(conf), default_registry())


def _groups(snap: Snapshot) -> dict[str, list[str]]:
    job = _session(snap).jobs["default/pg"]
    return {uid: sorted(t.task.name for t in sub.tasks.values()) for uid, sub in job.sub_jobs().items()}


def test_pods_are_grouped_by_the_first_policy_that_takes_them() -> None:
    """A policy takes the pods its selector selects that carry every key (non-empty); the first that takes a pod
    wins; a policy without keys takes none; the rest form the job's default sub-job (the job's key)."""
    policies = [
        {"name": "a", "matchLabelKeys": ["part"], "labelSelector": {"matchLabels": {"role": "worker"}}},
        {"name": "b", "matchLabelKeys": ["part", "zone"]},
        {"name": "c"},
    ]
    pods = [
        ("w0", {"role": "worker", "part": "0"}),
        ("w1", {"role": "worker", "part": "0", "zone": "x"}),
        ("w2", {"role": "worker", "part": "1"}),
        ("p0", {"role": "ps", "part": "0", "zone": "x"}),
        ("p1", {"role": "ps", "part": "0"}),
        ("e", {"role": "worker", "part": ""}),
    ]
    assert _groups(_docs({"minMember": 1, "subGroupPolicy": policies}, pods)) == {
        "default/pg/a-0": ["w0", "w1"],
        "default/pg/a-1": ["w2"],
        "default/pg/b-0-x": ["p0"],
        "default/pg": ["e", "p1"],
    }


def test_sub_job_ids_and_order() -> None:
    """Volcano's ids: ``<job>/<policy>-<values>``, a hash past 128 characters; sub-jobs of equal priority and
    readiness are served by their first value when a number, then by id."""
    assert sub_job_id("ns/pg", "w", ["1", "a"]) == "ns/pg/w-1-a"
    long = ["x" * 100, "y" * 40]
    assert sub_job_id("ns/pg", "w", long) == f"ns/pg/w-{_hash_id('-'.join(long))}"
    snap = _docs(
        {"minMember": 1, "subGroupPolicy": [{"name": "w", "matchLabelKeys": ["part"]}]},
        [
            ("a", {"part": "10"}),
            ("b", {"part": "9"}),
            ("c", {"part": "x"}),
        ],
    )
    session = _session(snap)
    subs = list(session.jobs["default/pg"].sub_jobs().values())
    ordered = sorted(subs, key=lambda s: sum(session.sub_job_less(o, s) for o in subs))
    assert [s.uid for s in ordered] == ["default/pg/w-x", "default/pg/w-9", "default/pg/w-10"]


def test_gang_needs_min_sub_groups() -> None:
    """gang: a job with fewer sub-groups than a policy's minSubGroups is not valid (Volcano's CheckSubJobValid);
    one is ready only when that many sub-groups of the policy are (CheckSubJobReady)."""
    policy = {"name": "w", "matchLabelKeys": ["part"], "subGroupSize": 2, "minSubGroups": 3}
    pods = [(f"p{i}", {"part": str(i // 2)}) for i in range(4)]
    result = run_cycle(_docs({"minMember": 1, "subGroupPolicy": [policy]}, pods), parse_config(CONF))
    reason = result.unschedulable["default/pg"]
    assert (reason.kind, reason.message) == (
        ReasonKind.INVALID,
        "Not enough valid subGroups of each task for gang-scheduling",
    )
    policy["minSubGroups"] = 2
    snap = _docs({"minMember": 1, "subGroupPolicy": [policy]}, pods)
    assert len(run_cycle(snap, parse_config(CONF)).binds) == 4
    gang = _session(snap).plugin("gang")
    job = _session(snap).jobs["default/pg"]
    assert not gang.job_ready(job)  # type: ignore[attr-defined]


def test_sub_group_switches_take_effect_and_round_trip() -> None:
    """enabledSubJobReady/Pipelined/Order switch gang's (and priority's) sub-job points; nobody asked: ready,
    pipelined."""
    conf = CONF.replace("  - name: gang\n", "  - name: gang\n    enabledSubJobReady: false\n")
    snap = _docs(
        {"minMember": 1, "subGroupPolicy": [{"name": "w", "matchLabelKeys": ["part"], "subGroupSize": 2}]},
        [
            ("p0", {"part": "0"}),
            ("p1", {"part": "0"}),
        ],
    )
    for text, ready in ((CONF, False), (conf, True)):
        session = _session(snap, text)
        job = session.jobs["default/pg"]
        (sub,) = job.sub_jobs().values()
        assert session.sub_job_ready(job, sub) is ready
    assert "enabledSubJobReady: false" in dump_config(parse_config(conf))


@pytest.mark.parametrize(
    ("job", "sub", "want"),
    [
        (NetworkTopology("hard", 2), NetworkTopology("soft", 0), JobTopology(True, 2)),
        (NetworkTopology("soft", 0), NetworkTopology("soft", 0), JobTopology(True, 3)),
        (None, NetworkTopology("soft"), JobTopology(True, 3)),
        (NetworkTopology("hard", 2), NetworkTopology("hard", 1), JobTopology(True, 1)),
        (None, NetworkTopology("hard", None, "rack"), JobTopology(True, 1)),
        (None, NetworkTopology("hard", None, "nowhere"), JobTopology(False, 0)),
        (NetworkTopology("hard", 2), None, None),
    ],
    ids=[
        "soft within a hard job: the job's tier",
        "soft within a soft job: the top tier",
        "soft without a job topology: the top tier",
        "hard: its own tier",
        "a tier name translated",
        "an unknown tier name: not hard",
        "none",
    ],
)
def test_sub_job_topology(job: NetworkTopology | None, sub: NetworkTopology | None, want: JobTopology | None) -> None:
    """Volcano's adjustNetworkTopologySpec for a sub-job (tiers 1 and 2, the top HyperNode tier 3)."""
    assert sub_job_topology(sub, Job("j", "j", network_topology=job), {"rack": 1, "spine": 2}, 3) == want


def test_each_sub_group_inside_a_rack_while_the_job_spans_the_spine() -> None:
    """Two sub-groups of two 2-CPU pods with a hard tier-1 topology each, the job hard at tier 2, on two racks of
    two 2-CPU nodes: each sub-group fills a rack; with one rack of three nodes and one of one, the second
    sub-group finds no rack and nothing is placed."""
    policy = {
        "name": "w",
        "matchLabelKeys": ["part"],
        "subGroupSize": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    pg = {"minMember": 4, "networkTopology": {"mode": "hard", "highestTierAllowed": 2}, "subGroupPolicy": [policy]}
    pods = [(f"p{i}", {"part": str(i // 2)}) for i in range(4)]
    result = run_cycle(_docs(pg, pods), parse_config(CONF))
    racks = {k: int(v[1:]) // 2 for k, v in result.binds.items()}
    assert len(racks) == 4
    assert racks["default/p0"] == racks["default/p1"] != racks["default/p2"] == racks["default/p3"]
    skewed = run_cycle(_docs(pg, pods, nodes=4, rack=3), parse_config(CONF))
    assert dict(skewed.binds) == {}
    reason = skewed.unschedulable["default/pg"]
    assert reason.kind == ReasonKind.TOPOLOGY
    without = run_cycle(_docs({**pg, "subGroupPolicy": []}, pods, nodes=4, rack=3), parse_config(CONF))
    assert len(without.binds) == 4  # the job alone may span the spine


def test_min_sub_groups_are_served_first() -> None:
    """With room for one sub-group of two only, the policy needing one ready sub-group gets it before a lower-id
    sub-group of a policy needing none."""
    policies = [
        {"name": "a-extra", "matchLabelKeys": ["extra"], "subGroupSize": 2, "minSubGroups": 0},
        {"name": "b-core", "matchLabelKeys": ["core"], "subGroupSize": 2, "minSubGroups": 1},
    ]
    pods = [("x0", {"extra": "0"}), ("x1", {"extra": "0"}), ("c0", {"core": "0"}), ("c1", {"core": "0"})]
    result = run_cycle(_docs({"minMember": 2, "subGroupPolicy": policies}, pods, nodes=2, rack=2), parse_config(CONF))
    assert sorted(result.binds) == ["default/c0", "default/c1"]


def test_sub_groups_decode_from_manifests_strictly() -> None:
    with pytest.raises(ValueError, match=r"subGroupPolicy\[0\].subGroupSize"):
        _docs({"subGroupPolicy": [{"name": "w", "subGroupSize": 0}]}, [])
    snap = snapshot_from_manifests(
        load_manifests(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\n"
            "spec:\n  subGroupPolicy:\n  - name: w\n    matchLabelKeys: [part]\n    minSubGroups: 2\n"
            "    labelSelector: {matchExpressions: [{key: role, operator: In, values: [worker]}]}\n"
            "    networkTopology: {mode: hard, highestTierName: rack}\n"
        )
    )
    (policy,) = next(j for j in snap.jobs if j.name == "pg").sub_group_policies
    assert (policy.min_groups, policy.match_label_keys, policy.network_topology) == (
        2,
        ("part",),
        NetworkTopology("hard", None, "rack"),
    )
    assert policy.selects({"role": "worker"})
    assert not policy.selects({"role": "ps"})


def test_cached_cycles_with_sub_groups_match_uncached() -> None:
    """A SessionCache keeps a job's sub-jobs with its opened state: three cycles (each advanced) decide as uncached
    ones, on a hit and on an update."""
    import math

    from scheduler.cache import SessionCache
    from scheduler.snapshot import advance

    policy = {"name": "w", "matchLabelKeys": ["part"], "subGroupSize": 2, "minSubGroups": 1}
    pg = {"minMember": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 2}, "subGroupPolicy": [policy]}
    snap = _docs(pg, [(f"p{i}", {"part": str(i // 2)}) for i in range(8)], nodes=6, rack=2)
    config = parse_config(CONF)
    cache = SessionCache(update_limit=math.inf)
    placed = []
    for _ in range(3):
        want = run_cycle(snap, config).to_json()
        assert run_cycle(snap, config, cache=cache).to_json() == want
        assert run_cycle(snap, config, cache=cache).to_json() == want
        result = run_cycle(snap, config)
        placed.append(len(result.binds))
        snap = advance(snap, result)
    assert placed == [6, 0, 0]
    assert cache.hits == 3
