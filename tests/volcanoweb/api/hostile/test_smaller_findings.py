"""Issue 28's smaller findings: NUL in a URL name is a 400 on both databases (it was a 500 on PostgreSQL), a
history ``from`` beyond datetime's range is a 400 (OverflowError), ``a notin ()`` is a 400 as in Kubernetes,
make run's HTTP parser answers an overlong request line with 414, compose trusts no private range for /metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.conftest import Cast

pytestmark = pytest.mark.both_databases
ROOT = Path(__file__).resolve().parents[4]


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/namespaces/team-a/jobs/%00",
        "/api/v1/namespaces/team-a/jobs/a%00b/timeline",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs/%00",
        "/apis/scheduling.volcano.sh/v1beta1/queues/%00",
        "/api/v1/queues/q%00/history",
        "/api/v1/namespaces/%00/pods",
        "/api/v1/namespaces/team-a/jobs?labelSelector=a%3D%00",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs?fieldSelector=metadata.name%3D%00",
    ],
)
def test_a_nul_in_a_url_is_a_400_status(cast: Cast, url: str) -> None:
    response = api(cast.alice).get(url)
    assert response.status_code == 400, response.content
    assert response.json()["kind"] == "Status"
    assert "NUL" in response.json()["message"]


def test_a_nul_in_a_page_url_is_a_400_too(cast: Cast) -> None:
    client = APIClient()
    client.force_login(cast.alice)
    assert client.get("/jobs/team-a/%00/").status_code == 400
    assert client.delete("/api/v1/namespaces/team-a/jobs/%00").status_code == 400


def test_a_history_start_beyond_the_calendar_is_a_400(cast: Cast) -> None:
    builders.make_queue("team-a-q", tenant="team-a")
    response = api(cast.alice).get("/api/v1/queues/team-a-q/history?from=1000000000000d")
    assert response.status_code == 400, response.content
    assert response.json()["details"]["causes"][0]["field"] == "from"
    assert api(cast.alice).get("/api/v1/queues/team-a-q/history?to=99999999999999d").status_code == 400


@pytest.mark.parametrize(
    "url", ["/api/v1/namespaces/team-a/jobs", "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs"]
)
@pytest.mark.parametrize("selector", ["a notin ()", "a in ()", "a in ( , )"])
def test_an_empty_set_in_a_label_selector_is_a_400(cast: Cast, url: str, selector: str) -> None:
    response = api(cast.alice).get(url, {"labelSelector": selector})
    assert response.status_code == 400, response.content
    assert "values set can't be empty" in response.json()["message"]
    assert api(cast.alice).get(url, {"labelSelector": "a notin (x)"}).status_code == 200


def test_make_runs_http_parser_answers_an_overlong_request_line_with_414() -> None:
    from twisted.internet.testing import StringTransport
    from twisted.web.http import HTTPChannel

    from volcanoweb.core import daphnecompat

    daphnecompat.apply()
    channel = HTTPChannel()
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(b"GET /api/v1/namespaces?x=" + b"a" * 24 * 1024 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert transport.value().startswith(b"HTTP/1.1 414 ")
    assert transport.disconnecting


def test_compose_trusts_no_private_range_for_metrics() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    values = [
        str(service["environment"]["METRICS_ALLOWED_NETWORKS"])
        for service in compose["services"].values()
        if isinstance(service.get("environment"), dict) and "METRICS_ALLOWED_NETWORKS" in service["environment"]
    ]
    assert values
    for value in values:
        for private in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"):
            assert private not in value


def test_daphne_sends_the_consumers_policy_and_size_close_codes() -> None:
    """Under daphne a close with 1008/1009 made autobahn raise ("invalid close code"): a traceback and 1011."""
    from daphne.ws_protocol import WebSocketProtocol

    from volcanoweb.core import daphnecompat

    daphnecompat.apply()
    daphnecompat.apply()  # idempotent
    sent: list[Any] = []
    protocol = WebSocketProtocol.__new__(WebSocketProtocol)
    protocol.sendCloseFrame = lambda code=None, isReply=False, reasonUtf8=None: sent.append(("frame", code))
    protocol.sendClose = lambda code=None, reason=None: sent.append(("application", code))
    for code in (1008, 1009, 4401, None):
        WebSocketProtocol.serverClose(protocol, code)
    assert sent == [("frame", 1008), ("frame", 1009), ("application", 4401), ("application", 1000)]
