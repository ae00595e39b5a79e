"""The bench's socket clients in processes of their own (bench/wsreaders.py), against a small WebSocket server: every
client connects with its cookie, notes each probe and job once with its arrival, each frame's delay, markers and
the server's stats, and the parent gets all of it merged."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.server import serve

from bench.wsreaders import ClientLog, Readers, _frame, probe_arrivals


class Server:
    """Sends every connected socket the same frames when told to; answers ``stats`` with the cookie it saw."""

    def __init__(self) -> None:
        self.sockets: list[Any] = []
        self.cookies: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    async def _handler(self, ws: Any) -> None:
        self.cookies.append(ws.request.headers.get("Cookie", ""))
        self.sockets.append(ws)
        async for text in ws:
            if json.loads(text).get("kind") == "stats":
                await ws.send(json.dumps({"kind": "stats", "frames": 2, "cookie": ws.request.headers["Cookie"]}))

    async def _main(self) -> None:
        self.stop = asyncio.Event()
        async with serve(self._handler, "127.0.0.1", 0) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self.ready.set()
            await self.stop.wait()

    def broadcast(self, doc: dict[str, Any]) -> None:
        async def send() -> None:
            for ws in list(self.sockets):
                await ws.send(json.dumps(doc))

        asyncio.run_coroutine_threadsafe(send(), self.loop).result(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def test_clients_in_child_processes_see_every_frame_and_the_parent_gets_it_merged(server: Server) -> None:
    cookies = ["sessionid=a", "sessionid=b"]
    readers = Readers(f"ws://127.0.0.1:{server.port}/ws/live/", "http://x", cookies, 5, 2, None, "bench-probe-")
    assert readers.wait_connected() == 5
    assert len(readers.children) == 2
    t0 = time.time()
    server.broadcast(
        {
            "kind": "changes",
            "t0": t0,
            "items": [
                {"kind": "priorityclass", "id": "bench-probe-0", "rev": 41},
                {"kind": "priorityclass", "id": "someone-else"},
                {"kind": "job", "id": "bench/e2e-1"},
                {"kind": "pod", "id": "*", "count": 3},
            ],
        }
    )
    server.broadcast({"kind": "changes", "t0": t0, "items": [{"kind": "job", "id": "bench/e2e-1"}, {"kind": "*"}]})
    readers.ask_stats()
    seen = readers.stop()  # waits for every socket's stats answer, which follows the frames above
    assert len(seen.clients) == 5
    assert seen.connect_errors == 0
    assert sorted(server.cookies) == ["sessionid=a"] * 3 + ["sessionid=b"] * 2  # round-robin over the cookies
    for log in seen.clients:
        assert list(log.probes) == ["bench-probe-0"]  # only the bench's probes, with their revision
        [(rev, arrived)] = log.probes["bench-probe-0"]
        assert rev == 41
        assert arrived >= t0
        assert list(log.first_seen) == ["bench/e2e-1"]  # the first frame naming the job
        assert log.first_seen["bench/e2e-1"] <= arrived + 1
        assert len(log.delays) == 2
        assert all(0 <= d < 5 for d in log.delays)
        assert log.counters == {"frames": 3, "items": 6, "markers": 1, "refresh_all": 1}  # the stats frame counts
        assert log.stats["kind"] == "stats"


def test_a_frame_of_one_change_and_an_error_are_read_as_before() -> None:
    log, other = ClientLog(), []
    _frame(log, json.dumps({"kind": "job", "id": "bench/e2e-2"}).encode(), 7.0, "bench-probe-", other)
    _frame(log, json.dumps({"kind": "error", "reason": "x"}).encode(), 8.0, "bench-probe-", other)
    _frame(log, b"not json", 9.0, "bench-probe-", other)
    assert log.first_seen == {"bench/e2e-2": 7.0}
    assert log.counters["frames"] == 2
    assert log.counters["items"] == 1
    assert other == ["{'kind': 'error', 'reason': 'x'}"]


def test_a_probe_arrives_with_its_row_at_its_revision_or_a_later_one() -> None:
    log = ClientLog(probes={"p-0": [(10, 1.5), (30, 4.0)], "p-1": [(20, 2.5)]})
    written = [("p-0", 10, 1.0), ("p-1", 20, 2.0), ("p-0", 25, 3.0), ("p-0", 30, 3.5), ("p-1", 40, 5.0)]
    delays, superseded = probe_arrivals(log, written)
    # p-0@25 came as p-0@30 (superseded by the next write to its row); p-1@40 never came
    assert delays == [0.5, 0.5, 1.0, 0.5]
    assert superseded == 1
