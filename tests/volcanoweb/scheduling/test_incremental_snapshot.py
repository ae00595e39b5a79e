"""The incremental snapshot (ADR 0018, ADR 0029): every write of a Pod or PodGroup row moves its
``resource_version`` (the change log's last revision of the row), so a snapshot that reads only the changed
rows equals one that reads them all, after every kind of write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.feed import triggers
from volcanoweb.feed.apps import _install
from volcanoweb.jobs.models import Pod, PodGroup
from volcanoweb.scheduling import cycles
from volcanoweb.scheduling.memo import Memo
from volcanoweb.scheduling.models import IntentKind, PodIntent
from volcanoweb.scheduling.services import run_cycle
from volcanoweb.scheduling.snapshots import SnapshotInfo, build_snapshot

NOW = 1_800_000_000.0


def assert_same(memo: Memo) -> SnapshotInfo:
    """The memo's incremental snapshot equals a full one read now (same clock); return the incremental one."""
    incremental = build_snapshot(memo, now=NOW)
    full = build_snapshot(now=NOW)
    assert incremental.snapshot == full.snapshot
    assert incremental.pod_ids == full.pod_ids
    assert incremental.podgroup_ids == full.podgroup_ids
    assert incremental.podgroup_phases == full.podgroup_phases
    return incremental


def _raw(table: str, column: str, value: Any, pk: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", [value, pk])


# Each write changes something the snapshot shows, the way some part of the product writes it.
POD_WRITES: dict[str, Callable[[Pod], None]] = {
    # a stale instance saved whole (its resource_version is an old one): ModelForm / admin / full save()
    "save": lambda pod: (setattr(pod, "node_name", "cpu-1"), pod.save()),
    "save update_fields": lambda pod: (
        setattr(pod, "annotations", {**pod.annotations, "volcano.sh/preemptable": "false"}),
        pod.save(update_fields=["annotations"]),
    ),
    "QuerySet.update": lambda pod: Pod.objects.filter(pk=pod.pk).update(phase="Running", node_name="cpu-2"),
    "QuerySet.update of a JSON column": lambda pod: Pod.objects.filter(pk=pod.pk).update(
        spec={**pod.spec, "nodeSelector": {"zone": "a"}}
    ),
    "bulk_update": lambda pod: (
        setattr(pod, "requests", {"cpu": 3000}),
        Pod.objects.bulk_update([pod], ["requests"]),
    ),
    "bulk_update_rows": lambda pod: (
        setattr(pod, "status", {**pod.status, "nominatedNodeName": "cpu-3"}),
        bulk_update_rows(Pod, [pod], ["status"]),
    ),
    "raw SQL": lambda pod: _raw("jobs_pod", "node_name", "cpu-0", pod.pk),
    "deletion timestamp": lambda pod: Pod.objects.filter(pk=pod.pk).update(
        node_name="cpu-0", deletion_timestamp=datetime(2026, 1, 1, tzinfo=UTC)
    ),
    "finished": lambda pod: Pod.objects.filter(pk=pod.pk).update(phase="Succeeded", node_name="cpu-0"),
    "delete": lambda pod: pod.delete(),
    "QuerySet.delete": lambda pod: Pod.objects.filter(pk=pod.pk).delete(),
    "leaves its group": lambda pod: Pod.objects.filter(pk=pod.pk).update(group_name=""),
    "bulk_create": lambda pod: Pod.objects.bulk_create(
        [Pod(namespace=pod.namespace, name="extra", group_name=pod.group_name, scheduler_name="volcano")]
    ),
}
GROUP_WRITES: dict[str, Callable[[PodGroup], None]] = {
    "save": lambda group: (setattr(group, "min_member", 1), group.save()),
    "QuerySet.update": lambda group: PodGroup.objects.filter(pk=group.pk).update(queue_name="other"),
    "bulk_update_rows": lambda group: (
        setattr(group, "annotations", {"volcano.sh/preemptable": "true"}),
        bulk_update_rows(PodGroup, [group], ["annotations"]),
    ),
    "raw SQL": lambda group: _raw("jobs_podgroup", "min_resources", '{"cpu": "2"}', group.pk),
    "completed": lambda group: (  # its pods all finished: the group and its pods leave the snapshot
        PodGroup.objects.filter(pk=group.pk).update(phase="Completed"),
        Pod.objects.filter(podgroup=group).update(phase="Succeeded"),
    ),
    "delete": lambda group: group.delete(),
}


@pytest.mark.parametrize("write", sorted(POD_WRITES))
def test_every_kind_of_pod_write_shows_in_the_incremental_snapshot(sim: Any, cast: Any, write: str) -> None:
    cluster_services.sync_from_backend()
    _group, pods = make_gang("inc", 3, tenant=cast.team_a)
    make_gang("other", 2, tenant=cast.team_a)
    memo = Memo()
    assert_same(memo)
    pod = Pod.objects.get(pk=pods[1].pk)
    before = pod.resource_version
    Pod.objects.filter(pk=pods[1].pk).update(priority=5)  # someone else wrote since: `pod` is stale now
    between = Pod.objects.filter(pk=pod.pk).values_list("resource_version", flat=True).first()
    assert between is not None
    assert between > before
    assert_same(memo)
    POD_WRITES[write](pod)
    after = Pod.objects.filter(pk=pod.pk).values_list("resource_version", flat=True).first()
    assert after == between if write == "bulk_create" else after is None or after > between
    info = assert_same(memo)
    assert memo.fetched["pod"] <= 2  # only the written row(s), not every pod
    if write in ("delete", "QuerySet.delete"):
        assert "team-a/inc-1" not in info.pod_ids


@pytest.mark.parametrize("write", sorted(GROUP_WRITES))
def test_every_kind_of_podgroup_write_shows_in_the_incremental_snapshot(sim: Any, cast: Any, write: str) -> None:
    cluster_services.sync_from_backend()
    group, _pods = make_gang("inc", 2, tenant=cast.team_a)
    make_gang("other", 2, tenant=cast.team_a)
    memo = Memo()
    assert_same(memo)
    GROUP_WRITES[write](PodGroup.objects.get(pk=group.pk))
    info = assert_same(memo)
    assert memo.fetched["podgroup"] <= 1
    assert memo.fetched["pod"] <= 2  # its own pods at most
    if write in ("delete", "completed"):
        assert "team-a/inc" not in info.podgroup_ids


def test_an_update_that_writes_the_same_values_keeps_the_version_and_a_change_moves_it(sim: Any, cast: Any) -> None:
    _group, (pod,) = make_gang("same", 1, tenant=cast.team_a)
    before = Pod.objects.get(pk=pod.pk).resource_version
    Pod.objects.filter(pk=pod.pk).update(node_name="")  # no change: no entry in the log, no new revision
    assert Pod.objects.get(pk=pod.pk).resource_version == before
    Pod.objects.filter(pk=pod.pk).update(node_name="cpu-1")
    assert Pod.objects.get(pk=pod.pk).resource_version > before


def test_the_comparison_sees_a_write_that_bypasses_the_version(sim: Any, cast: Any) -> None:
    """Without the change log's triggers (the state these tests guard against) the incremental snapshot goes
    stale: so the comparison above would catch a write path that did not move ``resource_version``."""
    _group, pods = make_gang("blind", 2, tenant=cast.team_a)
    memo = Memo()
    assert_same(memo)
    triggers.uninstall(connection)  # rolled back with the test's transaction
    Pod.objects.filter(pk=pods[0].pk).update(node_name="cpu-1")
    with pytest.raises(AssertionError):
        assert_same(memo)


def test_bind_intents_and_new_podgroups_rebuild_the_tasks_they_change(sim: Any, cast: Any) -> None:
    cluster_services.sync_from_backend()
    _group, pods = make_gang("late", 2, tenant=cast.team_a)
    Pod.objects.filter(pk=pods[0].pk).update(node_name="cpu-1")
    orphan = Pod.objects.create(
        namespace="team-a", name="orphan-0", group_name="orphan", scheduler_name="volcano", requests={"cpu": 1}
    )
    memo = Memo()
    info = assert_same(memo)
    assert "team-a/orphan-0" not in info.pod_ids  # no PodGroup yet: not a task
    intent = PodIntent.objects.create(kind=IntentKind.BIND, namespace="team-a", name="late-0", node="cpu-1")
    PodGroup.objects.create(namespace="team-a", name="orphan", min_member=1)
    info = assert_same(memo)
    assert orphan.pk in info.pod_ids.values()
    intent.delete()
    PodGroup.objects.filter(name="orphan").delete()
    info = assert_same(memo)
    assert "team-a/orphan-0" not in info.pod_ids


def test_the_product_s_cycle_and_cluster_writes_keep_the_loop_s_memo_exact(sim: Any, cast: Any) -> None:
    """The cycle's own memo after binds, the cluster's echo, pods starting and finishing."""
    _backend, clock = sim
    cluster_services.sync_from_backend()
    make_gang("a", 4, tenant=cast.team_a)
    make_gang("b", 2, tenant=cast.team_a, cpu=64_000)  # fits nowhere: gets a reason every cycle
    cycles._memo.reset()
    steps: list[Callable[[], Any]] = [
        lambda: run_cycle(),  # binds a-*: node_name, status, intents, PodGroup phase and conditions
        lambda: cluster_services.sync_from_backend(),  # the cluster's echo (uid, phase)
        lambda: clock.advance(5) or cluster_services.sync_from_backend(),  # Running
        lambda: run_cycle(),
        lambda: make_gang("c", 2, tenant=cast.team_a),
        lambda: run_cycle(),
        lambda: clock.advance(120) or cluster_services.sync_from_backend(),  # a-* finish
        lambda: run_cycle(),
    ]
    for step in steps:
        step()
        assert_same(cycles._memo)


OPS = st.lists(
    st.tuples(st.sampled_from(sorted(POD_WRITES)), st.integers(min_value=0, max_value=5)), min_size=1, max_size=6
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_sequence_of_writes_keeps_the_incremental_snapshot_exact(sim: Any, cast: Any, ops: Any) -> None:
    memo = Memo()
    if not PodGroup.objects.filter(name="h").exists():
        make_gang("h", 6, tenant=cast.team_a)
    assert_same(memo)
    for write, index in ops:
        pods = list(Pod.objects.filter(namespace="team-a").exclude(name="extra").order_by("pk"))
        if not pods:
            break
        if write == "bulk_create":
            Pod.objects.filter(name="extra").delete()
        POD_WRITES[write](pods[index % len(pods)])
        assert_same(memo)


def test_the_triggers_exist_and_migrate_puts_back_a_lost_one(db: Any) -> None:
    def pod_trigger_count() -> int:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'feed_jobs_pod'")
            else:
                cursor.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name GLOB 'feed_jobs_pod_*'"
                )
            return int(cursor.fetchone()[0])

    installed = pod_trigger_count()
    assert installed in (1, 3)  # PostgreSQL: one trigger; SQLite: one per operation
    triggers.uninstall(connection)  # e.g. SQLite rebuilding jobs_pod for an AlterField
    assert pod_trigger_count() == 0
    _install(sender=None, using="default")  # type: ignore[arg-type]  # what post_migrate runs
    assert pod_trigger_count() == installed


def test_clearing_stale_reasons_does_not_name_every_podgroup(sim: Any, cast: Any) -> None:
    from django.test.utils import CaptureQueriesContext

    cluster_services.sync_from_backend()
    make_gang("big", 2, tenant=cast.team_a, cpu=64_000)  # fits nowhere: gets a reason
    for i in range(5):
        make_gang(f"small{i}", 1, tenant=cast.team_a)
    run_cycle()
    big = PodGroup.objects.get(name="big")
    assert "unschedulableReason" in big.status
    Pod.objects.filter(podgroup=big).update(requests={"cpu": 1000})  # fits now
    with CaptureQueriesContext(connection) as queries:
        run_cycle()
    big.refresh_from_db()
    assert "unschedulableReason" not in big.status
    reads = [q["sql"] for q in queries.captured_queries if "unschedulableReason" in q["sql"]]
    assert reads
    assert not any(" IN (" in sql for sql in reads), reads


def test_a_write_the_snapshot_does_not_use_keeps_the_very_objects(sim: Any, cast: Any) -> None:
    """The scheduler writes its own conditions on pending pods and PodGroups every cycle: the rows are read
    again (their version moved) but the objects they give are the memo's, the identity the core's session
    cache and the insights recorder take as "unchanged"; a change the snapshot uses gives a new object."""
    cluster_services.sync_from_backend()
    group, pods = make_gang("keep", 2, tenant=cast.team_a)
    memo = Memo()
    first = assert_same(memo)
    job = next(j for j in first.snapshot.jobs if j.key == "team-a/keep")
    task = next(t for t in first.snapshot.tasks if t.key == "team-a/keep-0")
    condition = {"conditions": [{"type": "Unschedulable", "status": "True", "message": "0/3 nodes are available"}]}
    PodGroup.objects.filter(pk=group.pk).update(status=condition)
    Pod.objects.filter(pk=pods[0].pk).update(status={"conditions": [{"type": "PodScheduled", "status": "False"}]})
    second = assert_same(memo)
    assert memo.fetched["podgroup"] == 1
    assert memo.fetched["pod"] >= 1
    assert next(j for j in second.snapshot.jobs if j.key == "team-a/keep") is job  # … and kept
    assert next(t for t in second.snapshot.tasks if t.key == "team-a/keep-0") is task
    PodGroup.objects.filter(pk=group.pk).update(min_member=1)
    Pod.objects.filter(pk=pods[0].pk).update(priority=7)
    third = assert_same(memo)
    changed = next(j for j in third.snapshot.jobs if j.key == "team-a/keep")
    assert changed is not job
    assert changed.min_member == 1
    assert next(t for t in third.snapshot.tasks if t.key == "team-a/keep-0") is not task
