"""What a change of the log is for a browser: its message and its audience (tenant, admins, everyone)."""

from __future__ import annotations

from volcanoweb.feed.log import Change
from volcanoweb.live import feedsource


def _change(
    kind: str, row: dict, *, type_: str = "M", namespace: str = "team-a", name: str = "x", prev: dict | None = None
) -> Change:
    return Change(7, kind, 1, type_, namespace, name, "", row, prev)


def test_a_namespaced_object_goes_to_its_tenant_and_without_one_to_admins_only() -> None:
    for kind, live in (("jobs", "job"), ("pods", "pod"), ("podgroups", "podgroup"), ("events", "event")):
        payload, audience = feedsource.message(_change(kind, {"id": 1, "tenant_id": 3, "phase": "Running"}))
        assert payload == {"kind": live, "id": "team-a/x", "action": "update", "rev": 7, "phase": "Running"}
        assert audience == frozenset({3})
        assert feedsource.visible(audience, False, frozenset({3}))
        assert not feedsource.visible(audience, False, frozenset({4}))
        assert feedsource.visible(audience, True, frozenset())
        _, orphan = feedsource.message(_change(kind, {"id": 1, "tenant_id": None}))
        assert orphan == frozenset()
        assert not feedsource.visible(orphan, False, frozenset({3}))
        assert feedsource.visible(orphan, True, frozenset())


def test_cluster_kinds_go_to_everyone() -> None:
    for kind in ("nodes", "priorityclasses", "schedulerconfigurations", "hypernodes"):
        _, audience = feedsource.message(_change(kind, {"id": 1}, namespace=""))
        assert audience is None
        assert feedsource.visible(audience, False, frozenset())


def test_an_evicted_pod_says_so() -> None:
    row = {"id": 1, "tenant_id": 3, "deletion_timestamp": "2026-12-03T07:00:00", "status": {"evictedBy": {}}}
    payload, _ = feedsource.message(_change("pods", row))
    assert payload["evicted"] is True
    assert payload["terminating"] is True
    deleted, _ = feedsource.message(_change("pods", {"id": 1, "tenant_id": 3}, type_="D"))
    assert deleted["action"] == "delete"


def test_kinds_pages_do_not_show_have_no_message() -> None:
    assert feedsource.message(_change("somethingelse", {"id": 1})) is None


def test_a_pods_status_only_echo_reaches_no_socket() -> None:
    before = {"id": 1, "tenant_id": 3, "phase": "Running", "node_name": "n1", "status": {"restarts": 0}}
    echo = {**before, "status": {"restarts": 0, "startTime": "now"}}
    assert feedsource.message(_change("pods", echo, prev=before)) is None
    moved = {**before, "phase": "Succeeded"}
    assert feedsource.message(_change("pods", moved, prev=before))[0]["phase"] == "Succeeded"
    evicted = {**before, "status": {"evictedBy": {"action": "preempt"}}}
    assert feedsource.message(_change("pods", evicted, prev=before))[0]["evicted"] is True
    # other kinds: every change is shown
    job = {"id": 1, "tenant_id": 3, "status": {"running": 1}}
    assert feedsource.message(_change("jobs", job, prev={**job, "status": {}})) is not None
