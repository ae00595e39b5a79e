"""The change log under concurrent writers: every reader sees the same strictly increasing sequence of
revisions, the whole log, each revision once (never a revision and later one below it), and each entry is the
row as its transaction left it.

Real concurrency (transactional test, one connection per thread): on PostgreSQL the writers run side by side
and the revisions are given at commit; on SQLite the writers queue. Hypothesis chooses the writers' scripts.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volcanoweb.feed import log
from volcanoweb.feed.tailer import Tailer
from volcanoweb.jobs.models import PriorityClass

pytestmark = pytest.mark.django_db(transaction=True)

#: one transaction: a list of (operation, name index, value)
TXN = st.lists(
    st.tuples(st.sampled_from(["create", "update", "delete"]), st.integers(0, 3), st.integers(0, 99)),
    min_size=1,
    max_size=3,
)
SCRIPT = st.lists(TXN, min_size=1, max_size=6)


def _write(prefix: str, script: list[list[tuple[str, int, int]]], failures: list[BaseException]) -> None:
    try:
        for txn in script:
            with transaction.atomic():
                for op, index, value in txn:
                    name = f"{prefix}-{index}"
                    if op == "create":
                        PriorityClass.objects.get_or_create(name=name, defaults={"value": value})
                    elif op == "update":
                        PriorityClass.objects.filter(name=name).update(value=value)
                    else:
                        PriorityClass.objects.filter(name=name).delete()
    except BaseException as error:  # pragma: no cover - reported by the test
        failures.append(error)
    finally:
        connection.close()


def _read(start: int, stop: threading.Event, seen: list[int], failures: list[BaseException]) -> None:
    try:
        after = start
        while True:
            done = stop.is_set()
            upto = log.head()[0]  # readers read up to the revision every read is consistent with
            for change in log.changes(after, upto=upto, limit=100_000):
                seen.append(change.rev)
            after = max(after, upto)
            if done:
                return
    except BaseException as error:  # pragma: no cover
        failures.append(error)
    finally:
        connection.close()


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(scripts=st.lists(SCRIPT, min_size=2, max_size=3))
def test_every_reader_sees_the_whole_log_in_one_increasing_order(scripts: list[Any]) -> None:
    start = log.head()[0]
    tailer = Tailer()
    tailer.catch_up()
    failures: list[BaseException] = []
    stop = threading.Event()
    seen: list[list[int]] = [[], []]
    readers = [threading.Thread(target=_read, args=(start, stop, s, failures)) for s in seen]
    writers = [threading.Thread(target=_write, args=(f"w{i}", s, failures)) for i, s in enumerate(scripts)]
    ring: list[int] = []
    for thread in readers + writers:
        thread.start()
    while any(w.is_alive() for w in writers):
        tailer.catch_up()
        found = tailer.read("priorityclasses", ring[-1] if ring else start)
        ring += [c.rev for c in (found or ([], 0))[0]]
    for writer in writers:
        writer.join()
    stop.set()
    for reader in readers:
        reader.join()
    tailer.catch_up()
    found = tailer.read("priorityclasses", ring[-1] if ring else start)
    ring += [c.rev for c in (found or ([], 0))[0]]
    assert not failures, failures

    end = log.head(wait=True)[0]
    entries = log.changes(start, limit=100_000)
    revs = [c.rev for c in entries]
    assert revs == sorted(set(revs))  # strictly increasing
    assert not revs or revs[-1] <= end  # every entry committed is below the frontier once nothing commits
    if connection.vendor == "sqlite":
        assert revs == list(range(start + 1, end + 1))  # one writer at a time: gap-free too
    for reader in seen:
        assert reader == revs  # every reader saw the whole log, in order, each revision once
    assert ring == [c.rev for c in entries if c.kind == "priorityclasses"]  # the tailer's ring too
    # Replaying the log gives the rows as they are: the last entry of each object is its row.
    last: dict[int, Any] = {}
    for change in entries:
        last[change.obj_id] = change
    rows = {pc.pk: pc for pc in PriorityClass.objects.all()}
    for obj_id, change in last.items():
        if change.type == log.DELETED:
            assert obj_id not in rows
        else:
            assert rows[obj_id].value == change.data["value"]
            assert rows[obj_id].resource_version == change.rev
    PriorityClass.objects.all().delete()


def test_an_entry_s_time_is_its_commit_s_where_revisions_are_given_at_commit() -> None:
    """A reader's delay counts from the commit: on PostgreSQL, whose revisions are given at commit, an entry written
    early in a long transaction carries the commit's time; on SQLite (revisions at write, one writer at a time) it
    carries its write's."""
    since = log.head()[0]
    with transaction.atomic():
        PriorityClass.objects.create(name="slow-commit", value=1)
        written = time.time()
        time.sleep(0.3)
        before_commit = time.time()
    [change] = log.changes(since, ["priorityclasses"])
    if connection.vendor == "postgresql":
        assert before_commit <= change.at <= time.time()
    else:
        assert change.at <= written + 0.05
