"""Watches of one process woken by the same changes convert them once per caller and selection (the cost of a
change grows with the distinct watchers, not with the watches), and never hand one caller's lines to another."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.feed import log
from volcanoweb.kubeapi import watch
from volcanoweb.kubeapi.registry import RESOURCES
from volcanoweb.kubeapi.selection import Selection
from volcanoweb.tenancy.access import access_for

pytestmark = pytest.mark.django_db
JOBS = next(r for r in RESOURCES if r.plural == "jobs")


def _stream(user: Any, since: int, **options: Any) -> watch.Stream:
    selection = Selection.build(JOBS, access_for(user), options.pop("namespace", None), [], None)
    settings = {"initial": False, "bookmarks": False, "as_table": False, "timeout": 60, **options}
    stream = watch.Stream(selection, since=since, **settings)
    stream.start()
    return stream


def test_watches_of_one_caller_convert_each_change_once_whatever_their_cursors_and_another_tenant_never_gets_them(
    cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    since = log.head()[0]
    builders.make_job("team-a", "a-1")
    builders.make_job("team-b", "b-1")
    builders.make_job("team-a", "a-2")
    upto = log.head()[0]
    changes = log.changes(since, ["jobs"], upto=upto)
    converted: list[tuple[str, int]] = []
    real = Selection.event

    def counted(self: Selection, change: Any) -> Any:
        converted.append((self.access.username, change.rev))
        return real(self, change)

    monkeypatch.setattr(Selection, "event", counted)
    alice = [_stream(cast.alice, since) for _ in range(3)]
    late = _stream(cast.alice, changes[0].rev)  # one that read part of the batch already: another cursor
    charlie, table = _stream(cast.charlie, since), _stream(cast.alice, since, as_table=True)
    got = {id(s): s.event_lines(changes) for s in [*alice, late, charlie, table]}
    revs = [c.rev for c in changes]
    # alice's plain watches converted each change once (the late one took the lines the others made);
    # charlie's are his own; the Table watch prints its own
    assert converted == [("alice", r) for r in revs] + [("charlie", r) for r in revs] + [("alice", r) for r in revs]
    assert all(got[id(s)] == got[id(alice[0])] for s in alice)
    assert got[id(late)] == got[id(alice[0])][1:]  # a-1's creation was before its cursor
    assert len(got[id(late)]) >= 1
    names = {key: [line for line in lines if b'"name":"' in line] for key, lines in got.items()}
    assert any(b'"a-1"' in line for line in names[id(alice[0])])
    assert not any(b'"b-1"' in line for stream in [*alice, late] for line in got[id(stream)])
    assert not any(b'"a-1"' in line for line in got[id(charlie)])
    assert any(b'"b-1"' in line for line in got[id(charlie)])


def test_a_watch_reads_the_database_in_a_thread_only_for_changes_not_rendered_yet(cast: Any) -> None:
    since = log.head()[0]
    builders.make_job("team-a", "a-1")
    changes = log.changes(since, ["jobs"], upto=log.head()[0])
    first, second = _stream(cast.alice, since), _stream(cast.alice, since)
    assert first.needs_thread(changes)  # nothing rendered: the manifests may read the database
    lines = first.event_lines(changes)
    assert lines
    assert not second.needs_thread(changes)  # the lines are on the changes: the event loop takes them as they are
    assert second.event_lines(changes) == lines
    assert not _stream(cast.charlie, since).needs_thread(changes)  # rendered; charlie's decision is a dict away
    assert _stream(cast.alice, since, as_table=True).needs_thread(changes)  # a Table is the watch's own
