"""CronJobs (with next run times), JobFlows (with a DAG drawing) and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronsim import CronSim, CronSimError
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from volcanoweb.audit.models import AuditEntry
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import page
from volcanoweb.jobs.models import Job
from volcanoweb.workflows.models import CronJob, JobFlow

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def next_runs(schedule: str, tz_name: str | None, count: int = 3) -> list[datetime]:
    """Return the next run times of a cron schedule (empty when it cannot be parsed)."""
    import zoneinfo

    expr = MACROS.get(schedule.strip(), schedule.strip())
    try:
        tz = zoneinfo.ZoneInfo(tz_name) if tz_name else timezone.get_current_timezone()
        it = CronSim(expr, timezone.now().astimezone(tz))
        return [next(it) for _ in range(count)]
    except (CronSimError, zoneinfo.ZoneInfoNotFoundError, ValueError, StopIteration):
        return []


@login_required
def cronjobs(request: HttpRequest) -> HttpResponse:
    """List CronJobs with their next runs and last schedule."""
    scope = get_scope(request)
    rows = []
    for cron in scope.filter(CronJob.objects.all()).order_by("namespace", "name")[:500]:
        rows.append(
            {
                "cron": cron,
                "next": [] if cron.suspend else next_runs(cron.schedule, cron.time_zone),
                "active": len((cron.status or {}).get("active") or []),
            }
        )
    return page(
        request,
        "dashboard/cronjobs.html",
        {"nav": "cronjobs", "rows": rows},
        {"table": "dashboard/_cronjob_table.html"},
    )


@login_required
def jobflows(request: HttpRequest) -> HttpResponse:
    """List JobFlows."""
    scope = get_scope(request)
    flows = list(scope.filter(JobFlow.objects.all()).order_by("namespace", "name")[:500])
    return page(
        request,
        "dashboard/jobflows.html",
        {"nav": "jobflows", "flows": flows},
        {"table": "dashboard/_jobflow_table.html"},
    )


def dag_layout(flow: JobFlow, phases: dict[str, str]) -> dict[str, Any]:
    """Lay the flow's steps out in columns by dependency depth, for an SVG drawing."""
    steps = (flow.spec or {}).get("flows") or []
    deps = {s.get("name"): list(((s.get("dependsOn") or {}).get("targets")) or []) for s in steps if s.get("name")}
    depth: dict[str, int] = {}

    def level(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name in depth:
            return depth[name]
        if name in seen:
            return 0
        value = 1 + max((level(d, seen | {name}) for d in deps.get(name, []) if d in deps), default=-1)
        depth[name] = value
        return value

    columns: dict[int, list[str]] = {}
    for name in deps:
        columns.setdefault(level(name), []).append(name)
    w, h, gap_x, gap_y = 170, 44, 70, 24
    pos = {}
    for col, names in columns.items():
        for row, name in enumerate(sorted(names)):
            pos[name] = (20 + col * (w + gap_x), 20 + row * (h + gap_y))
    nodes = [
        {"name": n, "x": x, "y": y, "w": w, "h": h, "phase": phases.get(n, "Not started")} for n, (x, y) in pos.items()
    ]
    edges = [
        {"x1": pos[d][0] + w, "y1": pos[d][1] + h / 2, "x2": pos[n][0], "y2": pos[n][1] + h / 2}
        for n, ds in deps.items()
        for d in ds
        if d in pos
    ]
    width = 40 + (max(columns, default=0) + 1) * (w + gap_x)
    height = 40 + max((len(v) for v in columns.values()), default=1) * (h + gap_y)
    return {"nodes": nodes, "edges": edges, "width": width, "height": height}


@login_required
def jobflow_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Draw a JobFlow's DAG with each step's job phase."""
    scope = get_scope(request)
    flow = get_object_or_404(scope.filter(JobFlow.objects.all()), namespace=namespace, name=name)
    jobs = Job.objects.filter(namespace=namespace, controller_uid=flow.uid).values_list("name", "phase")
    prefix = f"{flow.name}-"
    phases = {job_name.removeprefix(prefix): phase for job_name, phase in jobs}
    context = {"nav": "jobflows", "flow": flow, "dag": dag_layout(flow, phases)}
    return page(request, "dashboard/jobflow_detail.html", context, {"dag": "dashboard/_jobflow_dag.html"})


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    """The audit log of the shown tenants (platform admins also see cluster-scoped changes)."""
    scope = get_scope(request)
    qs = AuditEntry.objects.only(
        "id", "at", "actor_name", "action", "kind", "object_key", "source", "message", "tenant_id"
    )
    ids = scope.tenant_ids
    if ids is not None:
        qs = qs.filter(tenant_id__in=ids)
    kind = request.GET.get("kind", "")
    if kind:
        qs = qs.filter(kind=kind)
    page_obj = Paginator(qs.order_by("-at", "-id"), 50).get_page(request.GET.get("page"))
    return page(
        request,
        "dashboard/audit.html",
        {
            "nav": "audit",
            "page_obj": page_obj,
            "kind": kind,
            "kinds": ["Job", "Queue", "SchedulerConfiguration", "CronJob", "JobFlow", "Membership"],
        },
        {"table": "dashboard/_audit_table.html"},
    )
