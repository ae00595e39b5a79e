"""The what-if simulation's merge of the live snapshot and the submitted manifests keeps the clock and quotas."""

from __future__ import annotations

from scheduler import Job, Snapshot
from scheduler.policies import ResourceQuota
from volcanoweb.api.simulate import merge


def test_merge_keeps_the_live_clock_and_quotas_and_dates_new_podgroups_now() -> None:
    live = Snapshot.of(
        jobs=[Job("u1", "old", created_at=100.0)],
        now=5000.0,
        resource_quotas=[ResourceQuota("q", "team-a", {"cpu": 1000}), ResourceQuota("keep", "team-b", {"cpu": 1})],
    )
    extra = Snapshot.of(
        jobs=[Job("u2", "new"), Job("u3", "dated", created_at=42.0)],
        resource_quotas=[ResourceQuota("q", "team-a", {"cpu": 2000})],
    )
    merged = merge(live, extra, set(), 1)
    assert merged.now == 5000.0
    assert {(q.namespace, q.name): q.hard["cpu"] for q in merged.resource_quotas} == {
        ("team-a", "q"): 2000,
        ("team-b", "keep"): 1,
    }
    created = {j.name: j.created_at for j in merged.jobs}
    assert created == {"old": 100.0, "new": 5000.0, "dated": 42.0}


def test_merge_keeps_the_live_topology_and_budgets_and_adds_submitted_hypernodes() -> None:
    from scheduler.model import HyperNode
    from scheduler.policies import PodDisruptionBudget

    live = Snapshot.of(
        hyper_nodes=[HyperNode("rack-a", 1), HyperNode("rack-b", 1)],
        pod_disruption_budgets=[PodDisruptionBudget("pdb", "ns")],
    )
    extra = Snapshot.of(hyper_nodes=[HyperNode("rack-b", 2), HyperNode("spine", 3)])
    merged = merge(live, extra, set(), 1)
    assert [(h.name, h.tier) for h in merged.hyper_nodes] == [("rack-a", 1), ("rack-b", 2), ("spine", 3)]
    assert [p.name for p in merged.pod_disruption_budgets] == ["pdb"]
