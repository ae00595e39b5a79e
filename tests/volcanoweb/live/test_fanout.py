"""Live fan-out that keeps up (ADR 0019): a slow client never delays a fast one, a client's queue is bounded
(merged per object, folded into markers, then a refresh), a client too far behind is closed, and a lost
channel message makes the client refetch. Ordering and events only: no clocks."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from tests.volcanoweb.live.test_broadcast import _consumer
from volcanoweb.live import consumers
from volcanoweb.live.consumers import ClientQueue, parse_topics, wanted


@pytest.fixture(autouse=True)
def _no_frame_spacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers, "FRAME_INTERVAL", 0.0)


def batch(seq: int, *payloads: dict[str, Any], src: str = "p1") -> dict[str, Any]:
    return {"type": "live.batch", "payloads": list(payloads), "group": "tenant.1", "src": src, "seq": seq, "t0": 1.0}


def job(n: int, phase: str) -> dict[str, Any]:
    return {"kind": "job", "id": f"ns/j{n}", "phase": phase}


@pytest.mark.asyncio
async def test_a_slow_client_does_not_delay_a_fast_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers, "MAX_BEHIND", 1000)
    blocked = asyncio.Event()
    slow, slow_out, slow_closed = _consumer(block=blocked)
    fast, fast_out, _ = _consumer()
    # The channel layer hands every batch to both sockets, the slow one first; its first frame never finishes
    # writing until the end, yet each handler returns and the fast socket gets every state, in order.
    seen: list[str] = []
    for step, phase in enumerate(("Pending", "Running", "Completing", "Completed"), start=1):
        event = batch(step, job(1, phase), job(step + 1, "Pending"))
        await slow.live_batch(event)
        await fast.live_batch(event)
        frame = await fast_out.get()
        seen.extend(f"{item['id']}:{item['phase']}" for item in frame["items"])
    assert seen[::2] == ["ns/j1:Pending", "ns/j1:Running", "ns/j1:Completing", "ns/j1:Completed"]
    assert slow.sending
    assert slow_out.empty()
    assert not slow_closed
    # The slow client lost only intermediate states: once its write completes it gets the latest of each object.
    blocked.set()
    first, second = await slow_out.get(), await slow_out.get()
    assert first["items"] == [job(1, "Pending"), job(2, "Pending")]
    assert second["items"] == [job(1, "Completed"), job(3, "Pending"), job(4, "Pending"), job(5, "Pending")]
    assert slow.queue.stats["merged"] == 2  # j1's Running and Completing were merged away
    for consumer in (slow, fast):
        consumer.sender.cancel()


@pytest.mark.asyncio
async def test_a_client_too_far_behind_is_closed_and_nobody_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers, "MAX_BEHIND", 3)
    monkeypatch.setattr(consumers, "QUEUE_LIMIT", 2)
    slow, _, slow_closed = _consumer(block=asyncio.Event())  # never reads
    fast, fast_out, _ = _consumer()
    await slow.live_batch(batch(1, job(0, "Pending")))
    await asyncio.sleep(0)  # the slow socket's sender takes its frame and blocks writing it
    assert slow.sending
    for step in range(2, 6):
        event = batch(step, job(step, "Pending"))
        await slow.live_batch(event)
        await fast.live_batch(event)
        assert (await fast_out.get())["items"] == [job(step, "Pending")]
        if step == 4:  # three objects over a limit of two: the kind is folded into one marker
            assert not slow_closed
            assert slow.queue.markers == {"job": 3}
    assert slow.closing is not None
    await slow.closing
    assert slow_closed == [consumers.CLOSE_TOO_SLOW]  # the fourth message while one frame was stuck
    assert slow.revoked
    await asyncio.gather(slow.sender, return_exceptions=True)
    assert slow.sender.cancelled()  # its stuck write was abandoned
    await slow.live_batch(batch(6, job(9, "Pending")))  # nothing more is queued for it
    assert not slow.queue
    fast.sender.cancel()


@pytest.mark.asyncio
async def test_a_lost_channel_message_makes_the_client_refetch() -> None:
    consumer, out, _ = _consumer()
    await consumer.live_batch(batch(1, job(1, "Pending")))
    assert (await out.get())["items"] == [job(1, "Pending")]
    await consumer.live_batch(batch(2, job(1, "Running"), src="p2"))  # another publisher: its first message
    assert (await out.get())["items"] == [job(1, "Running")]
    await consumer.live_batch(batch(3, job(2, "Pending")))  # p1's message 2 never came
    assert (await out.get())["items"] == [{"kind": "*", "id": "*"}]
    assert consumer.gaps == 1
    consumer.sender.cancel()


def test_the_queue_merges_folds_and_then_refreshes() -> None:
    queue = ClientQueue(limit=3)
    for i in range(3):
        queue.add({"kind": "pod", "id": f"ns/p{i}", "phase": "Pending"}, committed=5.0 + i)
    queue.add({"kind": "pod", "id": "ns/p0", "phase": "Running"}, committed=9.0)
    queue.add({"kind": "job", "id": "ns/j", "phase": "Running"}, committed=4.0)
    assert list(queue.items) == [("job", "ns/j")]  # 3 pods + a job is over the limit: the pods fold
    assert queue.markers == {"pod": 3}
    frame = queue.take()
    assert frame is not None
    assert frame["t0"] == 4.0
    assert frame["items"] == [{"kind": "job", "id": "ns/j", "phase": "Running"}, {"kind": "pod", "id": "*", "count": 3}]
    assert queue.stats == {"changes": 5, "merged": 1, "collapsed": 3, "refreshes": 0, "frames": 1, "items": 2}
    assert queue.take() is None
    queue.add({"kind": "pod", "id": "ns/p5"}, committed=1.0)
    queue.refresh_all()
    queue.add({"kind": "job", "id": "ns/k"}, committed=2.0)
    assert queue.take() == {"kind": "changes", "t0": 1.0, "items": [{"kind": "*", "id": "*"}]}


def test_subscriptions_filter_by_kind_and_id_prefix() -> None:
    topics = parse_topics({"topics": [["Job", ""], ["pod", "ns/j-"], ["pod", "other/x-"]]})
    assert topics == {"job": ("",), "pod": ("ns/j-", "other/x-")}
    assert wanted(topics, {"kind": "job", "id": "any/thing"})
    assert wanted(topics, {"kind": "pod", "id": "ns/j-0"})
    assert not wanted(topics, {"kind": "pod", "id": "ns/k-0"})
    assert wanted(topics, {"kind": "pod", "id": "*", "count": 4})
    assert not wanted(topics, {"kind": "node", "id": "n1"})
    assert wanted(topics, {"kind": "*", "id": "*"})
    assert wanted(None, {"kind": "node", "id": "n1"})
    for bad in ({"topics": "job"}, {"topics": [["job"]]}, {"topics": [[1, ""]]}, {"topics": [["job", ""]] * 65}):
        assert parse_topics(bad) is None


@pytest.mark.asyncio
async def test_the_hub_reads_from_the_same_redis_key_as_the_sockets_of_its_process() -> None:
    """channels_redis pops all of a process's channels of one prefix from one key under one lock: a hub
    channel with its own prefix was starved by 50 sockets' receive loops (nothing reached the sockets)."""
    from channels_redis.core import RedisChannelLayer

    from volcanoweb.live.hub import Hub

    layer = RedisChannelLayer(hosts=[os.environ["REDIS_URL"]], prefix="volcanoweb-test-hub")
    hub = Hub(layer)

    class Member:
        def enqueue(self, group: str, event: dict[str, Any]) -> None:
            return None

    member = Member()
    await hub.join(member, ["cluster"])
    channel, _ = hub.readers["cluster"]
    assert layer.non_local_name(channel) == layer.non_local_name(await layer.new_channel())
    await hub.leave(member)
    assert hub.readers == {}
