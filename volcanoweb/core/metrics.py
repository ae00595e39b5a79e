"""Prometheus metrics, named like Volcano's where Volcano has one.

Counters and histograms are recorded by the process that does the work; the
queue and job gauges are computed from the database at scrape time by
collectors that apps register, so any web process reports the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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


class _FunctionCollector(Collector):
    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()


def register_collector(collect: Callable[[], Iterable[Metric]]) -> None:
    """Register a function that yields metric families at scrape time."""
    REGISTRY.register(_FunctionCollector(collect))


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Serve the Prometheus text exposition format."""
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
