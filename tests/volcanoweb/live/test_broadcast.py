"""live.broadcast: messages go out on commit, merged per object, never for a rolled-back change."""

from __future__ import annotations

import asyncio
import json
import threading
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
        broadcast.publish("audit", "ml/a", tenant_id=3, phase="Pending")
        broadcast.publish("audit", "ml/a", tenant_id=3, phase="Running")
        broadcast.publish("cycle", "n1", ready=True)
        broadcast.publish("job", "ml/a", tenant_id=3, phase="Running")  # a row of the change log: not sent
        assert sent == []
    assert sent == [
        (groups.tenant_group(3), {"kind": "audit", "id": "ml/a", "phase": "Running"}),
        (groups.cluster_group(), {"kind": "cycle", "id": "n1", "ready": True}),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_is_never_sent(sent: list[tuple[str, dict[str, Any]]]) -> None:
    def failing_write() -> None:
        with transaction.atomic():
            broadcast.publish("audit", "ml/lost", tenant_id=1, phase="Running")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_write()
    with transaction.atomic():
        broadcast.publish("audit", "ml/kept", tenant_id=1, phase="Pending")
    assert [payload["id"] for _, payload in sent] == ["ml/kept"]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_it_sends_at_once(sent: list[tuple[str, dict[str, Any]]]) -> None:
    broadcast.publish("cycle", "latest", binds=4)
    assert sent == [(groups.cluster_group(), {"kind": "cycle", "id": "latest", "binds": 4})]


class RecordingLayer:
    """A channel layer that records its group sends, and says when it has seen ``expect`` payload ids."""

    def __init__(self, expect: set[str] | None = None) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.expect = set(expect or ())
        self.done = threading.Event()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append((group, message))
        self.expect -= {str(p["id"]) for p in message.get("payloads", [message.get("payload", {})])}
        if not self.expect:
            self.done.set()


def test_one_group_send_per_group_for_a_burst() -> None:
    outbox = broadcast.Outbox()
    pods = [(groups.tenant_group(1), {"kind": "pod", "id": f"ns/p{i}", "phase": "Running"}) for i in range(700)]
    outbox.add([*pods, (groups.cluster_group(), {"kind": "cycle", "id": "9"})], committed=100.0)
    kinds = [(group, message["type"], len(message["payloads"]), message["seq"]) for group, message in outbox.take()]
    # 700 tenant messages: 2 batches to the tenant, 2 to the admins (500 + 200), numbered per group
    assert kinds == [
        (groups.tenant_group(1), "live.batch", 500, 1),
        (groups.tenant_group(1), "live.batch", 200, 2),
        (groups.admin_group(), "live.batch", 500, 1),
        (groups.admin_group(), "live.batch", 200, 2),
        (groups.cluster_group(), "live.batch", 1, 1),
    ]
    assert outbox.take() == []


def test_commits_within_an_interval_become_one_message_per_group() -> None:
    """Three commits about the same 50 pods (and a job) are one channel message per group, latest state each."""
    outbox = broadcast.Outbox()
    tenant = groups.tenant_group(7)
    for n, phase in enumerate(("Pending", "Running", "Succeeded")):
        changes = [(tenant, {"kind": "pod", "id": f"ns/p{i}", "phase": phase}) for i in range(50)]
        outbox.add([*changes, (tenant, {"kind": "job", "id": "ns/j", f"step{n}": True})], committed=10.0 + n)
    sent = outbox.take()
    assert [group for group, _ in sent] == [tenant, groups.admin_group()]
    message = sent[0][1]
    assert message["changes"] == 153  # changes in, 51 payloads out
    assert len(message["payloads"]) == 51
    assert {p["phase"] for p in message["payloads"] if p["kind"] == "pod"} == {"Succeeded"}
    assert message["payloads"][-1] == {"kind": "job", "id": "ns/j", "step0": True, "step1": True, "step2": True}
    assert message["t0"] == 10.0  # the oldest commit in it: what the client's delay is measured from


def test_a_commit_is_sent_from_the_broadcast_loop_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    layer = RecordingLayer(expect={"ns/a", "ns/b"})
    monkeypatch.setattr(broadcast, "get_channel_layer", lambda: layer)
    broadcast.send_many([(groups.tenant_group(1), {"kind": "job", "id": "ns/a"})])
    broadcast.send_many([(groups.tenant_group(1), {"kind": "job", "id": "ns/b"})])
    assert layer.done.wait(30)  # a hang guard, not a threshold
    tenant = [m for g, m in layer.sent if g == groups.tenant_group(1)]
    assert [m["seq"] for m in tenant] == list(range(tenant[0]["seq"], tenant[0]["seq"] + len(tenant)))
    assert len(tenant) <= 2


@pytest.mark.asyncio
async def test_the_consumer_merges_a_batch_per_object(monkeypatch: pytest.MonkeyPatch) -> None:
    from volcanoweb.live.consumers import LiveConsumer

    consumer, out, _ = _consumer()
    payloads = [
        {"kind": "pod", "id": "a", "phase": "Running", "evicted": True},
        {"kind": "pod", "id": "a", "phase": "Failed"},
    ]
    await consumer.live_batch({"type": "live.batch", "payloads": [*payloads, {"kind": "pod", "id": "b"}], "t0": 5.0})
    frame = await out.get()
    assert frame["kind"] == "changes"
    assert frame["t0"] == 5.0
    merged = {"kind": "pod", "id": "a", "phase": "Failed", "evicted": True}
    assert frame["items"] == [merged, {"kind": "pod", "id": "b"}]
    assert isinstance(consumer, LiveConsumer)
    consumer.sender.cancel()


def _consumer(block: asyncio.Event | None = None) -> tuple[Any, asyncio.Queue[dict[str, Any]], list[int]]:
    """A LiveConsumer without a socket: its frames go to a queue (each send first waits for ``block``)."""
    from volcanoweb.live import consumers

    consumer = consumers.LiveConsumer()
    consumer.init_state()
    out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    closed: list[int] = []

    async def send(text_data: str | None = None, **kwargs: Any) -> None:
        if block is not None:
            await block.wait()
        out.put_nowait(json.loads(text_data or "{}"))

    async def close(code: int | None = None) -> None:
        closed.append(int(code or 0))

    async def nothing(*args: Any) -> None:
        return None

    consumer.send = send
    consumer.close = close
    consumer.channel_layer = type("Layer", (), {"group_discard": staticmethod(nothing)})()
    consumer.channel_name = "test"
    consumer.sender = asyncio.ensure_future(consumer._send_frames())
    return consumer, out, closed
