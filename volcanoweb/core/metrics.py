"""Prometheus metrics, named like Volcano's where Volcano has one.

Counters and histograms are recorded by the process that does the work; the
queue and job gauges are computed from the database at scrape time by
collectors that apps register, so any web process reports the same numbers.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Iterable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)

E2E_SCHEDULING_LATENCY = Histogram(
    "volcano_e2e_scheduling_latency_milliseconds",
    "End-to-end scheduling cycle latency in milliseconds.",
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000),
    registry=REGISTRY,
)
ACTION_SCHEDULING_LATENCY = Histogram(
    "volcano_action_scheduling_latency_microseconds",
    "Scheduling latency of one action in microseconds.",
    ["action"],
    buckets=(100, 500, 1000, 5000, 10000, 50000, 100000, 500000, 1000000),
    registry=REGISTRY,
)
PODS_BOUND = Counter("volcanoweb_pods_bound", "Pods bound by the scheduler.", registry=REGISTRY)
PODS_EVICTED = Counter("volcanoweb_pods_evicted", "Pods evicted by preempt or reclaim.", registry=REGISTRY)
SCHEDULE_ATTEMPTS = Counter(
    "volcano_schedule_attempts",
    "Scheduling cycles by result.",
    ["result"],
    registry=REGISTRY,
)


#: Seconds, for the change feed's delays (a dashboard frame is due within 0.5 s of its change's commit).
LAG_BUCKETS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
FEED_READ_LAG = Histogram(
    "volcanoweb_feed_read_lag_seconds",
    "From a change's commit (SQLite: its write) into the change log to its read by this process's tailer.",
    buckets=LAG_BUCKETS,
    registry=REGISTRY,
)
LIVE_FRAME_LAG = Histogram(
    "volcanoweb_live_frame_lag_seconds",
    "From the oldest change in a dashboard socket's frame to the frame's send.",
    buckets=LAG_BUCKETS,
    registry=REGISTRY,
)


def bucket_counts(histogram: Histogram) -> dict[str, int]:
    """A histogram's observations per bucket (not cumulative), by upper bound: ``{"0.05": 12, …, "+Inf": 0}``."""
    counts: dict[str, int] = {}
    below = 0.0
    for metric in histogram.collect():
        for sample in metric.samples:
            if sample.name.endswith("_bucket"):
                counts[sample.labels["le"]] = int(sample.value - below)
                below = sample.value
    return counts


class _FunctionCollector(Collector):
    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()


def register_collector(collect: Callable[[], Iterable[Metric]]) -> None:
    """Register a function that yields metric families at scrape time."""
    REGISTRY.register(_FunctionCollector(collect))


#: Headers a proxy adds: a request that carries one came through it, so its connection's address is the
#: proxy's, not the client's, and never earns the network trust.
FORWARDING_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-IP")


def _forwarded(request: HttpRequest) -> bool:
    names = list(FORWARDING_HEADERS)
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        names.append(proxy_header[0].removeprefix("HTTP_").replace("_", "-"))
    return any(request.headers.get(name) is not None for name in names)


def scrape_allowed(request: HttpRequest) -> bool:
    """Return whether ``request`` may read /metrics (it lists every tenant's queue names).

    ``METRICS_PUBLIC`` opens it to everyone. Otherwise ``Authorization: Bearer <METRICS_TOKEN>`` (what
    Prometheus sends with ``authorization: {credentials: ...}``) or a client address inside one of
    ``METRICS_ALLOWED_NETWORKS`` (by default the loopback addresses) is needed. The address is the
    connection's (``REMOTE_ADDR``), never a forwarded header, and a request that carries a proxy's
    forwarding header (``X-Forwarded-For``, ``X-Forwarded-Proto``, ...) gets no network trust at all: behind
    a proxy every client would have the proxy's address.
    """
    if settings.METRICS_PUBLIC:
        return True
    token: str = settings.METRICS_TOKEN
    networks: list[str] = settings.METRICS_ALLOWED_NETWORKS
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
    if networks and not _forwarded(request):
        try:
            address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
        except ValueError:
            return False
        return any(address in ipaddress.ip_network(net, strict=False) for net in networks)
    return False


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Serve the Prometheus text exposition format (to allowed scrapers only, see :func:`scrape_allowed`)."""
    if not scrape_allowed(request):
        response = HttpResponse("metrics: a bearer token or an allowed network is required\n", status=401)
        response["Content-Type"] = "text/plain; charset=utf-8"
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
