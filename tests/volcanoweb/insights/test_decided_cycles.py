"""Cycles that decided something (issue 29, item 9): their inputs outlive the last N for the retention in
settings, and the cycle list filters them by job, queue and decision."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from tests.volcanoweb.clusters.helpers import make_gang
from tests.volcanoweb.insights.scenario import cycles
from volcanoweb.clusters import services as cluster_services
from volcanoweb.insights import services as insights
from volcanoweb.insights.models import CycleDecision, CycleInput, CycleSnapshot
from volcanoweb.tenancy.access import SYSTEM


def _kept() -> list[int]:
    return list(CycleInput.objects.order_by("run_id").values_list("run_id", flat=True))


def test_a_cycle_that_decided_is_kept_for_the_retention_and_then_pruned(cluster: Any, cast: Any, settings: Any) -> None:
    _backend, clock = cluster
    make_gang("fits", 3, tenant=cast.team_a, cpu=6000)
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)  # no 9-CPU node: a verdict
    cluster_services.sync_from_backend()
    first, *quiet = cycles(clock, 4)
    decided = {(d.kind, d.job, d.pods) for d in CycleDecision.objects.filter(run_id=first.pk)}
    assert decided == {("bind", "team-a/fits", 3), ("unschedulable", "team-b/too-big", 0)}
    assert CycleInput.objects.get(run_id=first.pk).decided
    assert not CycleInput.objects.filter(run_id__in=[r.pk for r in quiet], decided=True).exists()  # verdict repeated
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1
    insights.prune()
    assert _kept() == [first.pk, quiet[-1].pk]  # the quiet ones went, the deciding one stays
    assert CycleSnapshot.objects.count() == len({r.snapshot_id for r in CycleInput.objects.all()})
    insights.prune(timezone.now() + timedelta(seconds=settings.INSIGHTS_DECIDED_CYCLE_RETENTION + 1))
    assert _kept() == [quiet[-1].pk]
    assert not CycleDecision.objects.filter(run_id=first.pk).exists()


def test_the_cycle_list_filters_by_job_queue_and_decision(cluster: Any, cast: Any, client_for: Any) -> None:
    _backend, clock = cluster
    make_gang("fits", 3, tenant=cast.team_a, cpu=6000)
    make_gang("too-big", 2, tenant=cast.team_b, namespace="team-b", cpu=9000)
    cluster_services.sync_from_backend()
    first, *_ = cycles(clock, 3)
    every = insights.list_cycles(SYSTEM)
    assert len(every) == 3
    by = insights.cycle_filter
    assert [c["cycle"] for c in insights.list_cycles(SYSTEM, where=by({"job": "team-a/fits"}))] == [first.pk]
    assert [c["cycle"] for c in insights.list_cycles(SYSTEM, where=by({"job": "too-big"}))] == [first.pk]
    refused = insights.list_cycles(SYSTEM, where=by({"decision": "unschedulable"}))
    assert [d["job"] for d in refused[0]["decisions"] if d["kind"] == "unschedulable"] == ["team-b/too-big"]
    assert insights.list_cycles(SYSTEM, where=by({"decision": "evict"})) == []
    assert insights.list_cycles(SYSTEM, where=by({"queue": "no-such-queue"})) == []
    root = client_for(cast.root, "token")
    listing = root.get("/api/v1/cycles?job=team-a/fits&decision=bind").json()
    assert [item["cycle"] for item in listing["items"]] == [first.pk]
    bad = root.get("/api/v1/cycles?decision=nope")
    assert bad.status_code == 400
    assert "decision" in bad.json()["message"]


def test_the_first_cycle_after_a_queue_change_is_kept_for_its_effects(cluster: Any, cast: Any, settings: Any) -> None:
    from volcanoweb.queues import services as queue_services

    _backend, clock = cluster
    make_gang("fits", 1, tenant=cast.team_a, cpu=1000)
    cluster_services.sync_from_backend()
    cycles(clock, 2)  # binds, then quiet
    queue_services.update_queue_spec(SYSTEM, "default", {"weight": 3}, source="test")
    after, *_later = cycles(clock, 3)  # quiet cycles: nothing decided
    assert not CycleInput.objects.get(run_id=after.pk).decided
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1
    insights.prune()
    assert after.pk in _kept()  # the input the change's effects are computed on
    insights.prune(timezone.now() + timedelta(seconds=settings.INSIGHTS_DECIDED_CYCLE_RETENTION + 1))
    assert after.pk not in _kept()


def test_a_changes_effects_cite_its_first_cycle_after_the_runs_prune_or_say_it_is_gone(
    cluster: Any, cast: Any, settings: Any
) -> None:
    """The runs prune (every 100 cycles, the runs older than the last KEEP_RUNS whose input was not a deciding
    cycle's) deleted the first cycle after a change, and its input with it (cascade), though the insights prune
    keeps that input for the retention: the change's effects then cited the first run left after it, a later
    cycle, as "the first after the change", and moved on as runs went. Now that run stays while its input does;
    once both are gone (the change older than the retention), the effects say so and cite no later cycle."""
    from volcanoweb.audit.models import AuditEntry
    from volcanoweb.insights.effects import effects_for
    from volcanoweb.queues import services as queue_services
    from volcanoweb.scheduling.cycles import prune_runs
    from volcanoweb.scheduling.models import SchedulingRun

    _backend, clock = cluster
    make_gang("fits", 1, tenant=cast.team_a, cpu=1000)
    cluster_services.sync_from_backend()
    cycles(clock, 2)  # binds, then quiet
    queue_services.update_queue_spec(SYSTEM, "default", {"weight": 3}, source="test")
    change = AuditEntry.objects.filter(kind="Queue", object_key="default", action="update").latest("at")
    after, *_quiet = cycles(clock, 3)  # quiet cycles: nothing decided
    make_gang("later", 1, tenant=cast.team_a, cpu=1000)
    cluster_services.sync_from_backend()
    later, last = cycles(clock, 2)  # a later cycle that decided something (a bind): kept for the retention
    assert CycleInput.objects.get(run_id=later.pk).decided
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1
    insights.prune()
    prune_runs(last.pk, keep=1)
    assert SchedulingRun.objects.filter(pk=after.pk).exists()  # kept with its input
    effects = effects_for(SYSTEM, change.pk)
    assert effects is not None
    assert effects["cycle"] == after.pk
    assert effects["available"] is True
    # past the retention the first cycle after the change goes, run and input; a later one is never cited
    settings.INSIGHTS_DECIDED_CYCLE_RETENTION = 0.001
    insights.prune(timezone.now() + timedelta(seconds=1))
    prune_runs(last.pk, keep=1)
    assert not SchedulingRun.objects.filter(pk=after.pk).exists()
    gone = effects_for(SYSTEM, change.pk)
    assert gone is not None
    assert gone["available"] is False
    assert gone.get("cycle") not in (later.pk, last.pk)
    assert "the first cycle after this change is no longer kept" in gone["message"]


def test_the_cycle_a_waiting_jobs_page_cites_is_kept_when_its_verdict_changes(
    cluster: Any, cast: Any, settings: Any, client_for: Any
) -> None:
    """Only a job's first unschedulable verdict was a deciding cycle: when the verdict changed (refused by its
    queue's capability, then by the cluster's admission room), the job's page cited the cycle of the new verdict,
    whose input went with the last N. A changed verdict decides too (kept, and found by the job filter), and the
    page cites the cycle its current wait began in."""
    import re

    from tests.volcanoweb import builders
    from tests.volcanoweb.insights.scenario import submit
    from volcanoweb.insights.models import DecisionKind
    from volcanoweb.queues import services as queue_services

    _backend, clock = cluster
    builders.make_queue("capped", capability={"cpu": "20", "memory": "640Gi"}, allowed=("team-a",))
    builders.make_queue("roomy", allowed=("team-a",))
    submit("wide", "capped", 15, "2")  # 30 CPU > its queue's 20: proportion refuses
    first, *_ = cycles(clock, 2)
    submit("holder", "roomy", 5, "2", duration="1h")  # 10 CPU, bound and running for the rest of the test
    cycles(clock, 3)
    queue_services.update_queue_spec(SYSTEM, "capped", {"capability": {"cpu": "100", "memory": "640Gi"}}, source="t")
    cycles(clock, 4)  # now the cluster's admission room refuses it (30 > 32 x 1.2 - 10): a new verdict
    client = client_for(cast.alice)
    page = client.get("/jobs/team-a/wide/?fragment=status").content.decode()
    assert "resource in cluster is overused" in page
    cited = int(re.findall(r"cycle #(\d+)", page)[0])
    assert cited > first.pk
    changed = CycleDecision.objects.get(job="team-a/wide", kind=DecisionKind.VERDICT)
    assert changed.run_id == cited
    settings.INSIGHTS_KEEP_CYCLE_INPUTS = 1
    cycles(clock, 2)
    insights.prune()
    assert cited in _kept()  # the cycle the page cites can still be downloaded
    assert first.pk in _kept()  # the first verdict too
    found = insights.list_cycles(SYSTEM, where=insights.cycle_filter({"job": "team-a/wide"}))
    assert {first.pk, cited} <= {c["cycle"] for c in found}
