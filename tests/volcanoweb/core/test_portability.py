"""Queries that differ between SQLite (the embedded default) and PostgreSQL (the stack) give the same answers.

This file runs in both passes of ``make test`` (it lives under tests/volcanoweb). Where a construct has one
implementation per backend, each implementation has its own test, marked ``postgresql_only`` or
``sqlite_only`` (deselected on the other backend).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.volcanoweb import builders
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.core import jsonq
from volcanoweb.jobs.models import Job, Pod, PodGroup
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.queues.models import Queue
from volcanoweb.workflows.models import CronJob

pytestmark = pytest.mark.django_db

#: Label maps of four objects: keys with a prefix, dots, slashes and a double underscore.
LABELS = [
    {"app": "web", "volcano.sh/createdByJobFlow": "team-a.flow", "a__b": "x"},
    {"app": "db", "volcano.sh/createdByJobFlow": "team-a.other"},
    {"app": "web"},
    {},
]
SELECTORS = {
    "app=web": ["o-0", "o-2"],
    "app==web": ["o-0", "o-2"],
    "app!=web": ["o-1", "o-3"],
    "app in (db,web)": ["o-0", "o-1", "o-2"],
    "app notin (web)": ["o-1", "o-3"],
    "volcano.sh/createdByJobFlow=team-a.flow": ["o-0"],
    "volcano.sh/createdByJobFlow!=team-a.flow": ["o-1", "o-2", "o-3"],
    "volcano.sh/createdByJobFlow in (team-a.flow,team-a.other)": ["o-0", "o-1"],
    "a__b=x": ["o-0"],
    "a__b": ["o-0"],
    "!a__b,app=web": ["o-2"],
    "app=web,app!=db,volcano.sh/createdByJobFlow": ["o-0"],
    "app=nothing": [],
}


def make_objects(cast: Any) -> None:
    tenant = cast.team_a
    for i, labels in enumerate(LABELS):
        name = f"o-{i}"
        Job.objects.create(name=name, namespace="team-a", tenant=tenant, queue_name="default", labels=labels)
        PodGroup.objects.create(name=name, namespace="team-a", tenant=tenant, queue_name="default", labels=labels)
        Pod.objects.create(name=name, namespace="team-a", tenant=tenant, labels=labels)
        CronJob.objects.create(name=name, namespace="team-a", tenant=tenant, schedule="@hourly", labels=labels)


@pytest.mark.parametrize("plural", ["jobs", "podgroups", "pods", "cronjobs"])
def test_label_selectors_answer_alike_on_every_list(cast: Any, alice_api: Any, plural: str) -> None:
    make_objects(cast)
    for selector, expected in SELECTORS.items():
        response = alice_api.get(f"/api/v1/namespaces/team-a/{plural}", {"labelSelector": selector})
        assert response.status_code == 200, (selector, response.content[:500])
        assert sorted(item["metadata"]["name"] for item in response.json()["items"]) == expected, selector
    bad = alice_api.get(f"/api/v1/namespaces/team-a/{plural}", {"labelSelector": "app in (a"})
    assert bad.status_code == 400
    assert bad.json()["details"]["causes"][0]["field"] == "labelSelector"


def test_the_label_helpers_keep_a_key_with_dots_slashes_and_underscores_whole(cast: Any) -> None:
    make_objects(cast)
    key = "volcano.sh/createdByJobFlow"
    assert list(Job.objects.filter(jsonq.label_equals(key, "team-a.flow")).values_list("name", flat=True)) == ["o-0"]
    assert sorted(Job.objects.filter(jsonq.label_missing(key)).values_list("name", flat=True)) == ["o-2", "o-3"]
    assert sorted(Job.objects.filter(jsonq.label_in("app", ["db"])).values_list("name", flat=True)) == ["o-1"]
    assert list(Job.objects.filter(jsonq.label_equals("a__b", "x")).values_list("name", flat=True)) == ["o-0"]
    # The same key as a Django lookup would be split at "__" (a path a -> b): the helpers are not.
    assert not Job.objects.filter(jsonq.label_equals("a", "x")).exists()


def test_bulk_update_rows_writes_every_row_its_own_values(cast: Any) -> None:
    make_objects(cast)
    pods = list(Pod.objects.order_by("name"))
    for i, pod in enumerate(pods):
        pod.node_name, pod.phase, pod.requests = f"node-{i}", "Running", {"cpu": 1000 * (i + 1)}
    with CaptureQueriesContext(connection) as ctx:
        bulk_update_rows(Pod, pods, ["node_name", "phase", "requests"])
    rows = list(Pod.objects.order_by("name").values_list("node_name", "phase", "requests"))
    assert rows == [(f"node-{i}", "Running", {"cpu": 1000 * (i + 1)}) for i in range(len(pods))]
    statements = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith(("UPDATE", "WITH"))]
    assert len(statements) == 1
    if connection.vendor == "postgresql":
        assert "FROM (VALUES" in statements[0]  # one joined VALUES list
    else:
        assert " FROM v WHERE " in statements[0]  # SQLite's UPDATE FROM a WITH list of VALUES
    assert "CASE WHEN" not in statements[0]  # not Django's bulk_update, an expression per value


def test_bulk_update_rows_keeps_every_type_and_splits_at_the_parameter_limit(cast: Any) -> None:
    """JSON, text, timestamps and nulls as the row saved them; more rows than one statement's parameters allow."""
    from datetime import UTC, datetime, timedelta

    pods = [Pod.objects.create(name=f"many-{i}", namespace="team-a", tenant=cast.team_a) for i in range(400)]
    started = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    for i, pod in enumerate(pods):
        pod.phase = "Running" if i % 2 else "Succeeded"
        pod.status = {"phase": pod.phase, "index": i, "note": 'it\'s "quoted"', "nested": {"list": [i, None]}}
        pod.node_name = f"node-{i % 7}" if i % 3 else ""
        pod.started_at = started + timedelta(seconds=i) if i % 5 else None
    with CaptureQueriesContext(connection) as ctx:
        bulk_update_rows(Pod, pods, ["phase", "status", "node_name", "started_at"])
    updates = [q["sql"] for q in ctx.captured_queries if q["sql"].lstrip().startswith(("UPDATE", "WITH"))]
    expected_statements = 1 if connection.vendor == "postgresql" else -(-400 // (999 // 5))
    assert len(updates) == expected_statements
    stored = {p.name: p for p in Pod.objects.filter(name__startswith="many-")}
    for i in range(400):
        pod = stored[f"many-{i}"]
        assert pod.phase == ("Running" if i % 2 else "Succeeded")
        assert pod.status == {"phase": pod.phase, "index": i, "note": 'it\'s "quoted"', "nested": {"list": [i, None]}}
        assert pod.node_name == (f"node-{i % 7}" if i % 3 else "")
        assert pod.started_at == (started + timedelta(seconds=i) if i % 5 else None)


# --- locking: FOR UPDATE [SKIP LOCKED] on PostgreSQL; one writer at a time (BEGIN IMMEDIATE) on SQLite


def _hold_lock(name: str, locked: threading.Event, release: threading.Event) -> None:
    try:
        with transaction.atomic():
            Queue.objects.select_for_update().get(name=name)
            locked.set()
            release.wait(10)
    finally:
        connection.close()


@pytest.mark.postgresql_only
@pytest.mark.django_db(transaction=True)
def test_postgresql_select_for_update_skip_locked_passes_over_a_locked_row() -> None:
    ensure_builtin_queues()  # an earlier transactional test may have flushed the migration's root queue
    builders.make_queue("busy")
    builders.make_queue("free")
    locked, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=("busy", locked, release))
    holder.start()
    try:
        assert locked.wait(10)
        with transaction.atomic(), CaptureQueriesContext(connection) as ctx:
            names = set(
                Queue.objects.select_for_update(skip_locked=True)
                .filter(name__in=["busy", "free"])
                .values_list("name", flat=True)
            )
        assert names == {"free"}
        assert "FOR UPDATE SKIP LOCKED" in ctx.captured_queries[-1]["sql"]
    finally:
        release.set()
        holder.join(10)


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_sqlite_transactions_take_the_write_lock_at_begin() -> None:
    """On SQLite ``select_for_update`` adds nothing to the SQL; ``transaction_mode=IMMEDIATE`` (settings)
    makes every transaction the only writer from its BEGIN, which is the exclusion the row locks give."""
    assert settings.DATABASES["default"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    ensure_builtin_queues()  # an earlier transactional test may have flushed the migration's root queue
    builders.make_queue("busy")
    path = settings.DATABASES["default"]["NAME"]
    other = sqlite3.connect(path, timeout=0.2, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # nobody holds the lock: a second writer gets it
        other.execute("ROLLBACK")
        with transaction.atomic(), CaptureQueriesContext(connection) as ctx:
            Queue.objects.select_for_update(skip_locked=True).filter(name="busy").first()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        assert "FOR UPDATE" not in ctx.captured_queries[-1]["sql"]
        other.execute("BEGIN IMMEDIATE")  # released at COMMIT
        other.execute("ROLLBACK")
    finally:
        other.close()
