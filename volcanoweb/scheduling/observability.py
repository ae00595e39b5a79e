"""Scrape-time metrics and the /readyz check of the scheduling loop (read-only queries)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from scheduler import parse_resource
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling.models import RunStatus, SchedulingRun

_QUEUE_COUNTS = ("pending", "inqueue", "running", "unknown", "completed")


def _vector(values: dict[str, Any] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in (values or {}).items():
        try:
            out[name] = parse_resource(name, value)
        except (ValueError, TypeError):
            continue
    return out


def collect_queue_metrics() -> Iterable[Metric]:
    """Yield Volcano-named queue gauges from the queue rows (allocated, deserved, capability, counts)."""
    families: dict[str, GaugeMetricFamily] = {}

    def family(name: str, doc: str, labels: tuple[str, ...] = ("queue_name",)) -> GaugeMetricFamily:
        if name not in families:
            families[name] = GaugeMetricFamily(name, doc, labels=list(labels))
        return families[name]

    for kind in ("allocated", "deserved", "capability"):
        family(f"volcano_queue_{kind}_milli_cpu", f"Queue {kind} CPU in millicores.")
        family(f"volcano_queue_{kind}_memory_bytes", f"Queue {kind} memory in bytes.")
        family(f"volcano_queue_{kind}_scalar_resources", f"Queue {kind} scalar resources.", ("queue_name", "resource"))
    for count in _QUEUE_COUNTS:
        family(f"volcano_queue_pod_group_{count}_count", f"Number of {count} PodGroups in the queue.")
    rows = Queue.objects.values("name", "allocated", "deserved", "capability", *_QUEUE_COUNTS)
    # Deserved as Volcano reports it: the share the fair-share plugin computed in the last cycle
    # (scheduler units: cpu in millicores, memory in bytes); the spec's deserved when none ran.
    latest = SchedulingRun.objects.filter(status=RunStatus.SUCCEEDED).order_by("-id").values("decisions").first()
    computed = ((latest["decisions"] if latest is not None else None) or {}).get("queueDeserved") or {}
    for row in rows:
        name = row["name"]
        for kind in ("allocated", "deserved", "capability"):
            vector = computed[name] if kind == "deserved" and name in computed else _vector(row[kind])
            if kind != "allocated" and not vector:
                continue
            families[f"volcano_queue_{kind}_milli_cpu"].add_metric([name], vector.get("cpu", 0))
            families[f"volcano_queue_{kind}_memory_bytes"].add_metric([name], vector.get("memory", 0))
            for resource, amount in sorted(vector.items()):
                if resource not in ("cpu", "memory", "pods"):
                    families[f"volcano_queue_{kind}_scalar_resources"].add_metric([name, resource], amount)
        for count in _QUEUE_COUNTS:
            families[f"volcano_queue_pod_group_{count}_count"].add_metric([name], row[count])
    last = (
        SchedulingRun.objects.filter(finished_at__isnull=False).order_by("-finished_at").values("finished_at").first()
    )
    age = GaugeMetricFamily(
        "volcanoweb_scheduling_last_cycle_age_seconds", "Seconds since the last scheduling cycle ended."
    )
    if last is not None and last["finished_at"] is not None:  # never None: filtered above
        age.add_metric([], (timezone.now() - last["finished_at"]).total_seconds())
    yield from families.values()
    yield age


class QueueCollector(Collector):
    """Scrape-time collector; ``describe`` is empty so registering it runs no query."""

    def collect(self) -> Iterable[Metric]:
        return collect_queue_metrics()

    def describe(self) -> Iterable[Metric]:
        return []


def cycle_age_limit() -> float:
    """Return the age after which the scheduling loop counts as stalled."""
    return 10 * float(settings.SCHEDULE_PERIOD) + 30.0


def cycle_age_check() -> dict[str, Any]:
    """/readyz: the last scheduling cycle must be recent, once any cycle has run."""
    last = (
        SchedulingRun.objects.filter(finished_at__isnull=False)
        .order_by("-finished_at")
        .values("id", "finished_at", "status")
        .first()
    )
    limit = cycle_age_limit()
    if last is None or last["finished_at"] is None:  # never None: filtered above
        return {"ok": True, "lastCycle": None, "limitSeconds": limit}
    age = (timezone.now() - last["finished_at"]).total_seconds()
    return {
        "ok": age <= limit,
        "lastCycle": last["id"],
        "lastStatus": last["status"],
        "ageSeconds": round(age, 3),
        "limitSeconds": limit,
    }
