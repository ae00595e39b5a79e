"""Kubernetes watchers for ``bench e2e --kube-watchers N``: N streams of
``/apis/batch.volcano.sh/v1alpha1/namespaces/<ns>/jobs?watch=1&resourceVersion=R`` opened before the run, read in
``--watch-processes P`` child processes of their own.

An informer runs in its own process, usually on another machine. Read on 100 threads of the bench's process (the
version before), the watches' 3.5 million events of a 10,000-job run were parsed under the GIL of the process
that also runs the 20 REST clients, so the bench delayed its own requests by its watchers' parsing and counted
that delay as the API's. Each child (spawned: it imports the standard library and httpx alone) reads its streams
on a thread per stream and records, per stream, the revision and arrival time (``time.time()``, the parent's
clock on one machine) of each event.

After the run each watcher's sequence is checked against the change log itself: every change of its
selection after R, in revision order, none missing, none duplicated; the delivery lag is the time from the
entry's write to the event's arrival.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from array import array
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench import children

#: What the parent sends a child: ``(UNTIL, revision, seconds)`` = wait until every stream has read up to the
#: revision (or the seconds pass), then stop and send the logs back.
UNTIL = "until"


@dataclass
class WatchLog:
    """What one watch stream saw: its events' revisions and arrival times (BOOKMARKs only move ``last``)."""

    revs: array[int] = field(default_factory=lambda: array("q"))
    arrived: array[float] = field(default_factory=lambda: array("d"))
    bookmarks: int = 0
    last: int = 0
    error: str = ""


#: An event line as kube-apiserver and this server write it: the type, then the object with only strings
#: (apiVersion, kind) before its metadata, and in the metadata the revision before any nested object. Anything
#: else is read with ``json.loads``.
_EVENT = re.compile(
    r'\{"type":\s*"([A-Z]+)",\s*"object":\s*\{(?:"[^"\\]*":\s*"[^"\\]*",\s*)*'
    r'"metadata":\s*\{[^{}]*?"resourceVersion":\s*"(\d+)"'
)


def event_of(line: str) -> tuple[str, int]:
    """The (type, metadata.resourceVersion) of an event line, by one anchored regular expression rather than
    decoding the whole object (a child reads 900,000 lines of a 10,000-job run; ``json.loads`` took ~8 µs a line)."""
    found = _EVENT.match(line)
    if found is not None:
        return found.group(1), int(found.group(2))
    event = json.loads(line)
    return event["type"], int(event["object"].get("metadata", {}).get("resourceVersion") or 0)


def read_stream(lines: Any, log: WatchLog, stopping: threading.Event) -> None:
    """Record the events of a stream's lines until it ends or ``stopping`` is set."""
    for line in lines:
        if stopping.is_set():
            return
        if not line:
            continue
        kind, rv = event_of(line)
        if kind == "BOOKMARK":
            log.bookmarks += 1
        else:
            log.revs.append(rv)
            log.arrived.append(time.time())
        log.last = max(log.last, rv)


def _watch(url: str, headers: dict[str, str], log: WatchLog, connected: threading.Event, stop: threading.Event) -> None:
    import httpx

    try:
        with (
            httpx.Client(timeout=httpx.Timeout(10.0, read=None)) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            connected.set()
            if response.status_code != 200:
                log.error = f"HTTP {response.status_code}"
                return
            read_stream(response.iter_lines(), log, stop)
    except Exception as error:  # the stack stopping closes the stream
        if not stop.is_set():
            log.error = repr(error)
    finally:
        connected.set()


def child_main(conn: Any, url: str, token: str, n: int) -> None:
    """Open ``n`` watches of ``url``, report when each answered, read until told to stop, send the logs back."""
    headers = {"Authorization": f"Bearer {token}"}
    stop = threading.Event()
    logs = [WatchLog() for _ in range(n)]
    connected = [threading.Event() for _ in range(n)]
    threads = [
        threading.Thread(target=_watch, args=(url, headers, log, ready, stop), daemon=True)
        for log, ready in zip(logs, connected, strict=True)
    ]
    for thread in threads:
        thread.start()
    conn.send(sum(ready.wait(30) for ready in connected))
    command, revision, seconds = conn.recv()
    assert command == UNTIL
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(
        t.is_alive() and log.last < revision for t, log in zip(threads, logs, strict=True)
    ):
        time.sleep(0.05)
    stop.set()
    conn.send([_settled(log) for log in logs])
    conn.close()


def _settled(log: WatchLog) -> WatchLog:
    """A copy of a stream's log whose arrays have the same length (its thread may be between its two appends)."""
    n = min(len(log.revs), len(log.arrived))
    return WatchLog(log.revs[:n], log.arrived[:n], log.bookmarks, log.last, log.error)


class Watchers:
    """``n`` watches from ``since`` of ``path`` in ``processes`` spawned children."""

    def __init__(self, base: str, token: str, path: str, since: int, n: int, processes: int) -> None:
        url = f"{base}{path}?watch=1&resourceVersion={since}&timeoutSeconds=3600&allowWatchBookmarks=true"
        processes = max(1, min(processes, n))
        self.children = children.spawn(
            child_main, [(url, token, len(range(p, n, processes))) for p in range(processes)]
        )

    def wait_connected(self) -> int:
        """Wait until every child's streams answered; return how many did."""
        return sum(int(parent.recv()) for _, parent in self.children)

    def stop(self, upto: int, settle: float) -> list[WatchLog]:
        """Let every stream read up to revision ``upto`` (at most ``settle`` s), stop them, return their logs."""
        return [log for logs in children.gather(self.children, (UNTIL, upto, settle)) for log in logs]


def start(base: str, token: str, namespace: str, n: int, since: int, processes: int = 4) -> Watchers:
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs"
    watchers = Watchers(base, token, path, since, n, processes)
    watchers.wait_connected()
    return watchers


def compare(logs: list[WatchLog], entries: list[tuple[int, float]]) -> dict[str, Any]:
    """Compare each stream's events with the log's ``(revision, written at)`` entries of its selection."""
    expected = [rev for rev, _ in entries]
    written = dict(entries)
    wanted = set(expected)
    lags: list[float] = []
    complete = in_order = no_duplicates = 0
    missing_total = 0
    for log in logs:
        revs = list(log.revs)
        in_order += revs == sorted(revs)
        no_duplicates += len(revs) == len(set(revs))
        missing = len(wanted - set(revs))
        missing_total += missing
        complete += missing == 0
        lags += [arrived - written[rv] for rv, arrived in zip(revs, log.arrived, strict=True) if rv in written]
    lags.sort()

    def pct(q: float) -> float | None:
        return round(lags[min(len(lags) - 1, int(q * len(lags)))] * 1000, 1) if lags else None

    errors = sorted({log.error for log in logs if log.error})
    return {
        "watchers": len(logs),
        "changes_in_the_log": len(expected),
        "events_received": sum(len(log.revs) for log in logs),
        "bookmarks_received": sum(log.bookmarks for log in logs),
        "watchers_complete": complete,
        "watchers_in_order": in_order,
        "watchers_without_duplicates": no_duplicates,
        "missing_events": missing_total,
        "errors": errors[:5],
        "delivery_ms": {
            "p50": pct(0.5),
            "p99": pct(0.99),
            "max": pct(1.0),
            "mean": round(statistics.fmean(lags) * 1000, 1) if lags else None,
        },
        "ok": bool(logs) and complete == in_order == no_duplicates == len(logs) and not errors,
    }


def check(watchers: Watchers, namespace: str, since: int, settle: float = 5.0) -> dict[str, Any]:
    """Wait until the watchers have the log's last change (or ``settle`` s pass), stop them, compare."""
    from volcanoweb.feed.models import FeedEntry

    rows = FeedEntry.objects.filter(kind="jobs", namespace=namespace, rev__gt=since).order_by("rev")
    entries = [
        (rev, at.timestamp() if isinstance(at, datetime) else float(at)) for rev, at in rows.values_list("rev", "at")
    ]
    logs = watchers.stop(entries[-1][0] if entries else since, settle)
    result = compare(logs, entries)
    result["processes"] = len(watchers.children)
    return result
