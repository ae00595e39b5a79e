"""The extender plugin over HTTP: the product's httpx transport against a real local HTTP server.

Volcano's extender_test.go as cases: TestMaxBodySizeLimit2 (an answer over 10 MiB is ``http: request body too
large``), TestIsInterested / TestHasManagedResources / TestHasResourcesInList (which pods the task hooks see with
``extender.managedResources``; our pods carry requests, into which Kubernetes copies limits, and init containers
count through the pod's request). The others are ours: each verb's answer and the ``ignorable`` rule on errors.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.model import JobPhase
from scheduler.plugins.extender import MAX_BODY, ExtenderError
from scheduler.snapshot import Snapshot
from scheduler.testing import make_job, make_node, make_snapshot, make_task
from volcanoweb.scheduling.extender import PRODUCT_REGISTRY, http_transport

Answer = Callable[[dict[str, Any]], tuple[int, Any]]


class Extender:
    """A local extender: ``answers[path](body) -> (status, JSON or raw bytes)``; every request is recorded."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.lstrip("/")
                owner.calls.append((path, body))
                status, answer = owner.answers.get(path, lambda b: (200, {}))(body)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # polled every 20 ms, so that close() returns at once (serve_forever polls every 0.5 s by default)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [p for p, _ in self.calls]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def extender() -> Iterator[Extender]:
    ext = Extender()
    yield ext
    ext.close()


def _conf(ext: Extender, actions: str = "enqueue, allocate", **args: Any) -> Any:
    arguments = {"extender.urlPrefix": ext.url, "extender.httpTimeout": "500ms", **args}
    return parse_config(
        {
            "actions": actions,
            "tiers": [{"plugins": [{"name": "predicates"}, {"name": "extender", "arguments": arguments}]}],
        },
        PRODUCT_REGISTRY,
    )


def _two_nodes(**job: Any) -> Snapshot:
    return make_snapshot([make_node("n1"), make_node("n2")], [make_job("j", replicas=1, **job)])


def _run(snap: Snapshot, conf: Any) -> Any:
    return run_cycle(snap, conf, registry=PRODUCT_REGISTRY)


def test_predicate_answers_keep_the_pod_off_a_node(extender: Extender) -> None:
    extender.answers["filter"] = lambda b: (
        200,
        {"status": "n1 is busy", "code": 3} if b["node"]["name"] == "n1" else {},
    )
    result = _run(_two_nodes(), _conf(extender, **{"extender.predicateVerb": "filter"}))
    assert result.binds == {"default/j-0": "n2"}
    sent = [b for p, b in extender.calls if p == "filter"]
    assert {b["node"]["name"] for b in sent} == {"n1", "n2"}
    assert sent[0]["task"]["name"] == "j-0"
    assert sent[0]["task"]["requests"]["cpu"] == 1000


def test_prioritize_scores_order_the_nodes(extender: Extender) -> None:
    extender.answers["score"] = lambda b: (200, {"nodeScore": {"n1": 1, "n2": 50}})
    assert _run(_two_nodes(), _conf(extender, **{"extender.prioritizeVerb": "score"})).binds == {"default/j-0": "n2"}


def _slow(b: dict[str, Any]) -> tuple[int, Any]:
    time.sleep(1.0)
    return 200, {}


@pytest.mark.parametrize(("ignorable", "bound"), [(True, True), (False, False)])
def test_a_timed_out_predicate_passes_only_when_ignorable(extender: Extender, ignorable: bool, bound: bool) -> None:
    extender.answers["filter"] = _slow
    conf = _conf(extender, **{"extender.predicateVerb": "filter", "extender.ignorable": ignorable})
    result = _run(make_snapshot([make_node("n1")], [make_job("j", replicas=1)]), conf)
    assert bool(result.binds) is bound
    if not bound:
        assert "timed out" in result.unschedulable["default/j"].message


def test_an_answer_over_ten_mebibytes_is_an_error(extender: Extender) -> None:
    """Volcano's TestMaxBodySizeLimit2."""
    extender.answers["test"] = lambda b: (200, b'{"padding":"' + b"a" * (MAX_BODY + 1) + b'"}')
    with pytest.raises(ExtenderError, match="http: request body too large"):
        http_transport(f"{extender.url}/test", {"task": {}, "node": {}}, 5.0)


@pytest.mark.parametrize(("status", "body", "message"), [(500, {}, "code 500"), (200, b"not json", "not JSON")])
def test_bad_answers_are_errors(extender: Extender, status: int, body: Any, message: str) -> None:
    extender.answers["x"] = lambda b: (status, body)
    with pytest.raises(ExtenderError, match=message):
        http_transport(f"{extender.url}/x", {}, 5.0)


def test_an_unreachable_extender_is_an_error() -> None:
    with pytest.raises(ExtenderError):
        http_transport("http://127.0.0.1:9/x", {}, 0.5)


@pytest.mark.parametrize(
    ("status", "ignorable", "phase"),
    [(-1, False, None), (1, False, "Inqueue"), ("fail", True, "Inqueue"), ("fail", False, None)],
)
def test_job_enqueueable_vote(extender: Extender, status: Any, ignorable: bool, phase: str | None) -> None:
    extender.answers["enqueue"] = lambda b: (500, {}) if status == "fail" else (200, {"status": status})
    conf = _conf(extender, "enqueue", **{"extender.jobEnqueueableVerb": "enqueue", "extender.ignorable": ignorable})
    snap = make_snapshot([make_node("n1")], [make_job("j", replicas=1, phase=JobPhase.PENDING, min_resources="auto")])
    assert _run(snap, conf).podgroups.get("default/j") == phase


def test_a_failed_session_open_registers_nothing_unless_ignorable(extender: Extender) -> None:
    extender.answers["open"] = lambda b: (500, {})
    extender.answers["filter"] = lambda b: (200, {"status": "no", "code": 2})
    args = {"extender.onSessionOpenVerb": "open", "extender.predicateVerb": "filter"}
    assert _run(_two_nodes(), _conf(extender, **args)).binds == {"default/j-0": "n1"}
    assert "filter" not in extender.paths()
    assert _run(_two_nodes(), _conf(extender, **args, **{"extender.ignorable": True})).binds == {}


def test_session_open_close_and_events_are_sent(extender: Extender) -> None:
    verbs = {
        "extender.onSessionOpenVerb": "open",
        "extender.onSessionCloseVerb": "close",
        "extender.allocateFuncVerb": "allocated",
        "extender.jobReadyVerb": "ready",
    }
    extender.answers["ready"] = lambda b: (200, {"status": True})
    result = _run(_two_nodes(), _conf(extender, **verbs))
    assert result.binds == {"default/j-0": "n1"}
    paths = extender.paths()
    assert paths[0] == "open"
    assert paths[-1] == "close"
    assert "allocated" in paths
    assert "ready" in paths
    assert extender.calls[0][1]["queues"] == ["default"]


def test_job_ready_false_discards_the_allocation(extender: Extender) -> None:
    extender.answers["ready"] = lambda b: (200, {"status": False})
    assert _run(_two_nodes(), _conf(extender, **{"extender.jobReadyVerb": "ready"})).binds == {}


INTERESTED = [
    ("empty managed resources - should return true", [], {}, True),
    ("container has managed resource in requests", ["nvidia.com/gpu"], {"nvidia.com/gpu": 1}, True),
    ("no managed resources in containers", ["nvidia.com/gpu"], {}, False),
    ("multiple managed resources - one match", ["nvidia.com/gpu", "amd.com/gpu"], {"amd.com/gpu": 1}, True),
    ("multiple managed resources - partial match", ["nvidia.com/gpu", "amd.com/gpu"], {"nvidia.com/gpu": 1}, True),
]


@pytest.mark.parametrize(("name", "managed", "scalars", "sent"), INTERESTED, ids=[c[0] for c in INTERESTED])
def test_only_pods_requesting_a_managed_resource_are_sent(
    extender: Extender, name: str, managed: list[str], scalars: dict[str, int], sent: bool
) -> None:
    """Volcano's TestIsInterested (and the helpers' tables it covers): the predicate is asked only for pods
    requesting a managed resource."""
    nodes = [make_node("n1", **{"nvidia.com/gpu": 4, "amd.com/gpu": 4})]
    snap = make_snapshot(nodes, [make_job("j", replicas=1, tasks=[make_task("j-0", **scalars)])])
    args: dict[str, Any] = {"extender.predicateVerb": "filter"}
    if managed:
        args["extender.managedResources"] = managed
    _run(snap, _conf(extender, **args))
    assert ("filter" in extender.paths()) is sent


def test_preemptable_victims_are_the_ones_the_extender_names(extender: Extender) -> None:
    """A high-priority pod on a full node: the extender names low-0, so that one goes (victim order alone would
    take low-1 first: the reverse of the task order)."""
    extender.answers["victims"] = lambda b: (
        200,
        {"status": 1, "victims": [{"uid": e["uid"]} for e in b["evictees"] if e["name"] == "low-0"]},
    )
    conf = parse_config(
        {
            "actions": "preempt",
            "tiers": [
                {
                    "plugins": [
                        {"name": "priority"},
                        {
                            "name": "extender",
                            "arguments": {"extender.urlPrefix": extender.url, "extender.preemptableVerb": "victims"},
                        },
                    ]
                }
            ],
        },
        PRODUCT_REGISTRY,
    )
    low = make_job("low", replicas=2, cpu="4", running_on=["n1", "n1"], phase=JobPhase.RUNNING, priority=1)
    high = make_job("high", replicas=1, cpu="4", priority=100)
    result = _run(make_snapshot([make_node("n1", cpu="8")], [low, high]), conf)
    assert [e.task for e in result.evictions] == ["default/low-0"]


def test_without_a_transport_the_extender_is_unreachable() -> None:
    """The core's default registry has no HTTP client: every call fails, as an unreachable extender's would."""
    conf = parse_config(
        {
            "actions": "allocate",
            "tiers": [
                {
                    "plugins": [
                        {
                            "name": "extender",
                            "arguments": {"extender.urlPrefix": "http://x", "extender.predicateVerb": "filter"},
                        }
                    ]
                }
            ],
        }
    )
    result = run_cycle(make_snapshot([make_node("n1")], [make_job("j", replicas=1)]), conf)
    assert "no HTTP transport" in result.unschedulable["default/j"].message


def test_wrong_arguments_name_the_argument() -> None:
    from scheduler.config import ConfigError

    with pytest.raises(ConfigError, match=r"arguments\.extender\.httpTimeout"):
        parse_config(
            {
                "actions": "allocate",
                "tiers": [{"plugins": [{"name": "extender", "arguments": {"extender.httpTimeout": "soon"}}]}],
            }
        )
