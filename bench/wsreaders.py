"""The dashboard-socket clients of ``bench e2e --ws-clients N``, in processes of their own.

A browser is a process on its user's machine. Read from one process, the N sockets' frames (1.5 million items for
4,000 jobs and 100 clients, each frame parsed by every client at the same moment) queued behind one another and
behind the REST clients for that process's GIL, so the bench measured its own queue in the frames' delay.
``--ws-processes P`` spreads the clients over P processes (spawned: they import the standard library and the
``websocket`` client alone), each reading its sockets on a thread per socket as before.

A child records what it sees with its own clock (``time.time()``, the same wall clock as the parent's on one
machine): per client, the arrival of each probe and of the first frame naming each job, each frame's delay from
its oldest commit (``t0``), its counters, the server's answer to ``stats`` and why a socket closed. The parent
matches the arrivals with the times it wrote the probes and got the jobs' API answers.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench import children

#: What the parent sends a child over its pipe.
STATS, STOP = "stats", "stop"
#: Seconds a stopping child waits for the answers to ``stats`` it asked for.
STATS_WAIT = 10.0


@dataclass
class ClientLog:
    """What one socket saw."""

    #: probe row name -> (revision, arrival) of each item naming it
    probes: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    first_seen: dict[str, float] = field(default_factory=dict)
    delays: list[float] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=lambda: {"frames": 0, "items": 0, "markers": 0, "refresh_all": 0})
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChildLog:
    """What one child process saw: its clients' logs, its failed connections, closes and other messages."""

    clients: list[ClientLog] = field(default_factory=list)
    connect_errors: int = 0
    closed: dict[str, int] = field(default_factory=dict)
    other: list[str] = field(default_factory=list)


def _item(log: ClientLog, doc: dict[str, Any], now: float, probe_prefix: str) -> None:
    kind, ident = doc.get("kind"), doc.get("id")
    if ident == "*" or kind == "*":
        log.counters["refresh_all" if kind == "*" else "markers"] += 1
    elif kind == "priorityclass" and isinstance(ident, str) and ident.startswith(probe_prefix):
        rev = doc.get("rev")
        log.probes.setdefault(ident, []).append((rev if isinstance(rev, int) else 0, now))
    elif kind == "job" and isinstance(ident, str) and ident not in log.first_seen:
        log.first_seen[ident] = now


def _frame(log: ClientLog, data: bytes, now: float, probe_prefix: str, other: list[str]) -> None:
    """Count one text frame: a batch of changes (``{"kind": "changes", "t0", "items"}``), the server's stats, or
    (the code before ADR 0019) one change per frame."""
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        doc = json.loads(data)
        log.counters["frames"] += 1
        kind = doc.get("kind")
        if kind == "changes":
            if isinstance(doc.get("t0"), (int, float)):
                log.delays.append(now - float(doc["t0"]))
            for entry in doc["items"]:
                log.counters["items"] += 1
                _item(log, entry, now, probe_prefix)
        elif kind == "stats":
            log.stats = doc
        elif kind in ("pong", "subscribed", "error"):
            if kind == "error" and len(other) < 20:
                other.append(str(doc)[:200])
        else:
            log.counters["items"] += 1
            _item(log, doc, now, probe_prefix)


def _read(ws: Any, log: ClientLog, stop: threading.Event, child: ChildLog, lock: threading.Lock, prefix: str) -> None:
    import websocket

    ws.settimeout(1.0)
    while not stop.is_set():
        try:
            opcode, frame = ws.recv_data_frame(True)
        except websocket.WebSocketTimeoutException:
            continue
        except Exception as exc:
            with lock:
                child.closed[type(exc).__name__] = child.closed.get(type(exc).__name__, 0) + 1
            return
        now = time.time()
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = str(struct.unpack("!H", frame.data[:2])[0]) if len(frame.data) >= 2 else "none"
            with lock:
                child.closed[code] = child.closed.get(code, 0) + 1
            return
        _frame(log, frame.data, now, prefix, child.other)


def child_main(conn: Any, url: str, origin: str, cookies: list[str], topics: Any, prefix: str) -> None:
    """Connect one socket per cookie, report the number connected, read until told to stop, send the log back."""
    import websocket

    child = ChildLog()
    sockets = []
    for cookie in cookies:
        try:
            ws = websocket.create_connection(url, header=[f"Cookie: {cookie}"], origin=origin, timeout=30)
            if topics is not None:
                ws.send(json.dumps({"kind": "subscribe", "topics": topics}))
            log = ClientLog()
            child.clients.append(log)
            sockets.append((ws, log))
        except Exception:
            child.connect_errors += 1
    stop, lock = threading.Event(), threading.Lock()
    threads = [
        threading.Thread(target=_read, args=(ws, log, stop, child, lock, prefix), daemon=True) for ws, log in sockets
    ]
    for thread in threads:
        thread.start()
    conn.send(len(sockets))
    asked = False
    while (command := conn.recv()) != STOP:
        if command == STATS:
            asked = True
            for ws, _ in sockets:
                with contextlib.suppress(Exception):
                    ws.send(json.dumps({"kind": "stats"}))
    if asked:  # a socket's answer comes after every frame sent to it before: wait for them (or its end)
        deadline = time.monotonic() + STATS_WAIT
        pending = list(zip(threads, (log for _, log in sockets), strict=True))
        while time.monotonic() < deadline and any(t.is_alive() and not log.stats for t, log in pending):
            time.sleep(0.02)
    stop.set()
    for thread in threads:
        thread.join(3)
    for ws, _ in sockets:
        with contextlib.suppress(Exception):
            ws.close()
    conn.send(child)
    conn.close()


def probe_arrivals(log: ClientLog, written: list[tuple[str, int, float]]) -> tuple[list[float], int]:
    """Match one client's probe items with the probes written (row, revision, time of the write's return): a probe
    arrived with the first item naming its row at its revision or a later one (a later write to the row supersedes
    it, as a socket sends each object's latest state). Return each arrived probe's delay and how many were
    superseded."""
    delays: list[float] = []
    superseded = 0
    for name, rev, at in written:
        arrivals = log.probes.get(name, ())
        k = bisect.bisect_left(arrivals, (rev, float("-inf")))
        if k < len(arrivals):
            delays.append(arrivals[k][1] - at)
            superseded += arrivals[k][0] > rev
    return delays, superseded


class Readers:
    """``clients`` sockets in ``processes`` child processes (round-robin over ``cookies``)."""

    def __init__(
        self, url: str, origin: str, cookies: list[str], clients: int, processes: int, topics: Any, prefix: str
    ) -> None:
        processes = max(1, min(processes, clients))
        self.children = children.spawn(
            child_main,
            [
                (url, origin, [cookies[k % len(cookies)] for k in range(p, clients, processes)], topics, prefix)
                for p in range(processes)
            ],
        )

    def wait_connected(self) -> int:
        """Wait until every child has connected its sockets; return how many are connected."""
        return sum(int(parent.recv()) for _, parent in self.children)

    def ask_stats(self) -> None:
        for _, parent in self.children:
            parent.send(STATS)

    def stop(self) -> ChildLog:
        """Stop every child (once each socket had its answer to :meth:`ask_stats`, if asked) and merge what they
        saw."""
        merged = ChildLog()
        log: ChildLog
        for log in children.gather(self.children, STOP):
            merged.clients += log.clients
            merged.connect_errors += log.connect_errors
            for key, count in log.closed.items():
                merged.closed[key] = merged.closed.get(key, 0) + count
            merged.other += log.other[: 20 - len(merged.other)]
        return merged
