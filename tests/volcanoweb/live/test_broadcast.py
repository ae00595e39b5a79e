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


class RecordingLayer:
    """A channel layer that records its group sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append((group, message))


def test_one_group_send_per_group_for_a_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    layer = RecordingLayer()
    monkeypatch.setattr(broadcast, "get_channel_layer", lambda: layer)
    pods = [(groups.tenant_group(1), {"kind": "pod", "id": f"ns/p{i}", "phase": "Running"}) for i in range(700)]
    broadcast.send_many([*pods, (groups.cluster_group(), {"kind": "cycle", "id": "9"})])
    kinds = [(group, message["type"], len(message.get("payloads", [1]))) for group, message in layer.sent]
    # 700 tenant messages: 2 batches to the tenant, 2 to the admins (500 + 200); the single one as is
    assert kinds == [
        (groups.tenant_group(1), "live.batch", 500),
        (groups.tenant_group(1), "live.batch", 200),
        (groups.admin_group(), "live.batch", 500),
        (groups.admin_group(), "live.batch", 200),
        (groups.cluster_group(), "live.message", 1),
    ]
    assert layer.sent[0][1]["payloads"][0] == {"kind": "pod", "id": "ns/p0", "phase": "Running"}


@pytest.mark.asyncio
async def test_the_consumer_coalesces_a_batch_per_object() -> None:
    from volcanoweb.live.consumers import LiveConsumer

    consumer = LiveConsumer()
    consumer.buffer, consumer.flusher = {}, None
    out: list[dict[str, Any]] = []

    async def send_json(payload: dict[str, Any]) -> None:
        out.append(payload)

    consumer.send_json = send_json  # type: ignore[method-assign]
    payloads = [
        {"kind": "pod", "id": "a", "phase": "Running", "evicted": True},
        {"kind": "pod", "id": "a", "phase": "Failed"},
    ]
    await consumer.live_batch({"type": "live.batch", "payloads": [*payloads, {"kind": "pod", "id": "b"}]})
    assert consumer.flusher is not None
    await consumer.flusher
    assert out == [{"kind": "pod", "id": "a", "phase": "Failed", "evicted": True}, {"kind": "pod", "id": "b"}]


def test_a_burst_of_one_kind_is_collapsed_into_one_message() -> None:
    from volcanoweb.live.consumers import collapse

    pods = [{"kind": "pod", "id": f"ns/p{i}"} for i in range(5)]
    job = {"kind": "job", "id": "ns/j", "phase": "Running"}
    assert collapse([*pods, job], limit=5) == [*pods, job]
    assert collapse([*pods, job], limit=4) == [{"kind": "pod", "id": "*", "count": 5}, job]
    # a window over the frame budget collapses its most numerous kinds first
    nodes = [{"kind": "node", "id": f"n{i}"} for i in range(3)]
    assert collapse([*pods, *nodes, job], limit=10, budget=6) == [
        {"kind": "pod", "id": "*", "count": 5},
        *nodes,
        job,
    ]
