"""live.broadcast: messages go out on commit, merged per object, never for a rolled-back change."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from volcanoweb.live import broadcast, groups


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    captured: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(broadcast, "send_many", lambda messages: captured.extend(messages))
    broadcast.discard_pending()
    return captured


@pytest.mark.django_db(transaction=True)
def test_messages_are_sent_on_commit_and_merged(sent: list[tuple[str, dict[str, Any]]]) -> None:
    with transaction.atomic():
        broadcast.publish("job", "ml/a", tenant_id=3, phase="Pending")
        broadcast.publish("job", "ml/a", tenant_id=3, phase="Running")
        broadcast.publish("node", "n1", ready=True)
        assert sent == []
    assert sent == [
        (groups.tenant_group(3), {"kind": "job", "id": "ml/a", "phase": "Running"}),
        (groups.cluster_group(), {"kind": "node", "id": "n1", "ready": True}),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_is_never_sent(sent: list[tuple[str, dict[str, Any]]]) -> None:
    def failing_write() -> None:
        with transaction.atomic():
            broadcast.publish("job", "ml/lost", tenant_id=1, phase="Running")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_write()
    with transaction.atomic():
        broadcast.publish("job", "ml/kept", tenant_id=1, phase="Pending")
    assert [payload["id"] for _, payload in sent] == ["ml/kept"]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_it_sends_at_once(sent: list[tuple[str, dict[str, Any]]]) -> None:
    broadcast.publish("cycle", "latest", binds=4)
    assert sent == [(groups.cluster_group(), {"kind": "cycle", "id": "latest", "binds": 4})]
