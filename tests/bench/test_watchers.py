"""The bench's Kubernetes watchers in processes of their own (bench/watchers.py), against a small streaming HTTP
server: every stream sends its token, reads each event's revision with its arrival, counts BOOKMARKs apart, stops
once it has read up to the revision it is given, and the comparison with the log names what is missing, out of
order or duplicated."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bench.watchers import _EVENT, Watchers, WatchLog, compare, event_of, read_stream


def _line(kind: str, rv: int) -> bytes:
    return (json.dumps({"type": kind, "object": {"metadata": {"resourceVersion": str(rv)}}}) + "\n").encode()


class Server:
    """Streams every watch the same events: MODIFIED 11..20 and a BOOKMARK at 25, then keeps the stream open."""

    def __init__(self) -> None:
        seen = self.seen = []  # type: list[tuple[str, str]]
        done = self.done = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                seen.append((self.path, self.headers.get("Authorization", "")))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                body = b"".join(_line("MODIFIED", rv) for rv in range(11, 21)) + _line("BOOKMARK", 25)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))
                self.wfile.flush()
                done.wait(10)  # the stream stays open until the test ends

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.done.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def test_streams_in_child_processes_see_every_event_and_the_parent_gets_their_logs(server: Server) -> None:
    before = time.time()
    watchers = Watchers(server.base, "tok", "/apis/x/jobs", 10, 5, 2)
    assert watchers.wait_connected() == 5
    assert len(watchers.children) == 2
    logs = watchers.stop(25, 10.0)
    assert len(logs) == 5
    assert {path for path, _ in server.seen} == {
        "/apis/x/jobs?watch=1&resourceVersion=10&timeoutSeconds=3600&allowWatchBookmarks=true"
    }
    assert {auth for _, auth in server.seen} == {"Bearer tok"}
    for log in logs:
        assert list(log.revs) == list(range(11, 21))
        assert (log.bookmarks, log.last, log.error) == (1, 25, "")
        assert all(before <= t <= time.time() for t in log.arrived)
    entries = [(rv, before) for rv in range(11, 21)]
    result = compare(logs, entries)
    assert result["ok"] is True
    assert (result["watchers_complete"], result["missing_events"], result["events_received"]) == (5, 0, 50)
    assert result["bookmarks_received"] == 5


def _log(revs: list[int]) -> WatchLog:
    log = WatchLog()
    read_stream([_line("MODIFIED", rv).decode() for rv in revs], log, threading.Event())
    return log


def test_the_comparison_names_missing_reordered_and_duplicated_events() -> None:
    entries = [(1, 0.0), (2, 0.0), (3, 0.0)]
    result = compare([_log([1, 2, 3]), _log([1, 3]), _log([2, 1, 3]), _log([1, 2, 2, 3])], entries)
    assert result["watchers_complete"] == 3
    assert result["missing_events"] == 1
    assert result["watchers_in_order"] == 3
    assert result["watchers_without_duplicates"] == 3
    assert result["ok"] is False
    assert compare([_log([1, 2, 3])], entries)["ok"] is True


def test_a_stream_that_fails_is_not_ok() -> None:
    log = _log([1])
    log.error = "HTTP 403"
    result = compare([log], [(1, 0.0)])
    assert result["ok"] is False
    assert result["errors"] == ["HTTP 403"]


@pytest.mark.parametrize(
    ("obj", "fast"),
    [
        # this server's shape (separators without spaces), and json.dumps' default one: read by the expression
        (
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "a", "resourceVersion": "42"},
            },
            True,
        ),
        ({"metadata": {"resourceVersion": "42", "labels": {"a": "b"}}, "spec": {}}, True),
        # shapes the expression does not take: read whole, never a nested object's revision
        ({"metadata": {"labels": {"resourceVersion": "7"}, "resourceVersion": "42"}}, False),
        ({"spec": {"template": {"metadata": {"resourceVersion": "7"}}}, "metadata": {"resourceVersion": "42"}}, False),
        ({"kind": "Job", "note": 'a \\"quoted\\" kind', "metadata": {"resourceVersion": "42"}}, False),
    ],
)
def test_an_event_s_type_and_revision_are_the_object_s_own(obj: dict[str, Any], fast: bool) -> None:
    for separators in ((",", ":"), (", ", ": ")):
        line = json.dumps({"type": "MODIFIED", "object": obj}, separators=separators)
        assert event_of(line) == ("MODIFIED", 42)
        assert (_EVENT.match(line) is not None) is fast  # which path read it


def test_an_error_event_has_no_revision() -> None:
    line = json.dumps({"type": "ERROR", "object": {"kind": "Status", "metadata": {}, "code": 410}})
    assert event_of(line) == ("ERROR", 0)
