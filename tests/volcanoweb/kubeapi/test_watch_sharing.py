"""Watches of one process woken by the same changes convert them once per caller and selection (the cost of a
change grows with the distinct watchers, not with the watches), and never hand one caller's lines to another."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

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


def test_watches_of_one_caller_share_their_lines_and_another_tenant_s_never_gets_them(
    cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    since = log.head()[0]
    builders.make_job("team-a", "a-1")
    builders.make_job("team-b", "b-1")
    upto = log.head()[0]
    changes = log.changes(since, ["jobs"], upto=upto)
    converted: list[str] = []
    real = watch.Stream.event_lines

    def counted(self: watch.Stream, found: list[Any]) -> list[bytes]:
        converted.append(self.selection.access.username)
        return real(self, found)

    monkeypatch.setattr(watch.Stream, "event_lines", counted)
    watch._LINES.clear()
    alice = [_stream(cast.alice, since) for _ in range(3)]
    charlie, table = _stream(cast.charlie, since), _stream(cast.alice, since, as_table=True)
    got = {id(s): async_to_sync(watch._shared_lines)(s, changes, upto) for s in [*alice, charlie, table]}
    assert converted == ["alice", "charlie", "alice"]  # alice's three plain watches converted once; Table: its own
    names = {key: [line for line in lines if b'"name":"' in line] for key, lines in got.items()}
    assert all(got[id(s)] == got[id(alice[0])] for s in alice)
    assert any(b'"a-1"' in line for line in names[id(alice[0])])
    assert not any(b'"b-1"' in line for stream in alice for line in got[id(stream)])
    assert not any(b'"a-1"' in line for line in got[id(charlie)])
    assert any(b'"b-1"' in line for line in got[id(charlie)])
