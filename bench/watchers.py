"""Kubernetes watchers for ``bench e2e --kube-watchers N``: N streams of
``/apis/batch.volcano.sh/v1alpha1/namespaces/<ns>/jobs?watch=1&resourceVersion=R`` opened before the run.

After the run each watcher's sequence is checked against the change log itself: every change of its
selection after R, in revision order, none missing, none duplicated; the delivery lag is the time from the
entry's write to the event's arrival.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from datetime import datetime
from typing import Any


class Watcher(threading.Thread):
    """One watch stream, recording (revision, type, arrival time) per event."""

    def __init__(self, base: str, token: str, path: str, since: int) -> None:
        super().__init__(daemon=True)
        self.url = f"{base}{path}?watch=1&resourceVersion={since}&timeoutSeconds=3600"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.events: list[tuple[int, str, float]] = []
        self.error = ""
        self.connected = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        import httpx

        try:
            with (
                httpx.Client(timeout=httpx.Timeout(10.0, read=None)) as client,
                client.stream("GET", self.url, headers=self.headers) as response,
            ):
                self.connected.set()
                if response.status_code != 200:
                    self.error = f"HTTP {response.status_code}"
                    return
                for line in response.iter_lines():
                    if self.stopping.is_set():
                        return
                    if not line:
                        continue
                    event = json.loads(line)
                    rv = int(event["object"].get("metadata", {}).get("resourceVersion") or 0)
                    self.events.append((rv, event["type"], time.time()))
        except Exception as error:  # the stack stopping closes the stream
            if not self.stopping.is_set():
                self.error = repr(error)
        finally:
            self.connected.set()


def start(base: str, token: str, namespace: str, n: int, since: int) -> list[Watcher]:
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs"
    watchers = [Watcher(base, token, path, since) for _ in range(n)]
    for watcher in watchers:
        watcher.start()
    for watcher in watchers:
        watcher.connected.wait(30)
    return watchers


def check(watchers: list[Watcher], namespace: str, since: int, settle: float = 5.0) -> dict[str, Any]:
    """Wait until the watchers have the log's last change (or ``settle`` s pass), stop them, compare."""
    from volcanoweb.feed.models import FeedEntry

    entries = list(
        FeedEntry.objects.filter(kind="jobs", namespace=namespace, rev__gt=since)
        .order_by("rev")
        .values_list("rev", "at")
    )
    expected = [rev for rev, _ in entries]
    written = {rev: at.timestamp() if isinstance(at, datetime) else float(at) for rev, at in entries}
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline and expected:
        if all(w.events and w.events[-1][0] >= expected[-1] for w in watchers):
            break
        time.sleep(0.2)
    for watcher in watchers:
        watcher.stopping.set()
    lags: list[float] = []
    complete = in_order = no_duplicates = 0
    missing_total = 0
    for watcher in watchers:
        revs = [rv for rv, kind, _ in watcher.events if kind != "BOOKMARK"]
        in_order += revs == sorted(revs)
        no_duplicates += len(revs) == len(set(revs))
        missing = len(set(expected) - set(revs))
        missing_total += missing
        complete += missing == 0
        lags += [arrived - written[rv] for rv, kind, arrived in watcher.events if rv in written]
    lags.sort()

    def pct(q: float) -> float | None:
        return round(lags[min(len(lags) - 1, int(q * len(lags)))] * 1000, 1) if lags else None

    return {
        "watchers": len(watchers),
        "changes_in_the_log": len(expected),
        "events_received": sum(len(w.events) for w in watchers),
        "watchers_complete": complete,
        "watchers_in_order": in_order,
        "watchers_without_duplicates": no_duplicates,
        "missing_events": missing_total,
        "errors": sorted({w.error for w in watchers if w.error})[:5],
        "delivery_ms": {
            "p50": pct(0.5),
            "p99": pct(0.99),
            "max": pct(1.0),
            "mean": round(statistics.fmean(lags) * 1000, 1) if lags else None,
        },
        "ok": complete == in_order == no_duplicates == len(watchers) and not any(w.error for w in watchers),
    }
