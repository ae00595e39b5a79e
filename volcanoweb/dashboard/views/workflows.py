"""CronJobs (with next run times), JobFlows (with a DAG drawing) and the audit log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from cronsim import CronSim, CronSimError
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard import gone
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import HtmxHttpRequest, error_info, page
from volcanoweb.jobs.models import FINISHED_JOB_PHASES, Event, Job
from volcanoweb.tenancy.access import Access
from volcanoweb.workflows import services as workflow_services
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
    crons = list(scope.filter(CronJob.objects.all()).order_by("namespace", "name")[:500])
    last: dict[Any, Job] = {}
    owned = Job.objects.filter(controller_uid__in=[c.uid for c in crons]).only("name", "phase", "controller_uid")
    for job in owned.order_by("created_at", "name"):
        last[job.controller_uid] = job
    for cron in crons:
        rows.append(
            {
                "cron": cron,
                "next": [] if cron.suspend else next_runs(cron.schedule, cron.time_zone),
                "active": len((cron.status or {}).get("active") or []),
                "last": last.get(cron.uid),
            }
        )
    return page(
        request,
        "dashboard/cronjobs.html",
        {"nav": "cronjobs", "rows": rows},
        {"table": "dashboard/_cronjob_table.html"},
    )


def cronjob_history(cron: CronJob, limit: int = 50) -> list[dict[str, Any]]:
    """Return the CronJob's jobs, newest first, with phase, start (creation) and finish (last transition)."""
    rows = []
    jobs = Job.objects.filter(controller_uid=cron.uid).only(
        "namespace", "name", "phase", "created_at", "status", "annotations"
    )
    for job in jobs.order_by("-created_at", "-name")[:limit]:
        finished = None
        if job.phase in FINISHED_JOB_PHASES:
            stamp = ((job.status or {}).get("state") or {}).get("lastTransitionTime")
            try:
                finished = datetime.fromisoformat(stamp) if isinstance(stamp, str) and stamp else None
            except ValueError:
                finished = None
        manual = (job.annotations or {}).get(workflow_services.MANUAL_INSTANTIATE_ANNOTATION) == "manual"
        rows.append({"job": job, "started": job.created_at, "finished": finished, "manual": manual})
    return rows


CRON_ACTIONS: dict[str, tuple[Callable[[Access, str, str], object], str]] = {
    "suspend": (workflow_services.suspend_cronjob, "Suspended {key}: no new jobs until it is resumed."),
    "resume": (workflow_services.resume_cronjob, "Resumed {key}: it runs on its schedule again."),
    "run": (workflow_services.run_cronjob_now, "Started job {job} from {key}."),
}


def _cronjob_context(cron: CronJob, can_write: bool) -> dict[str, Any]:
    namespace, name = cron.namespace, cron.name
    events = Event.objects.filter(involved_kind="CronJob", involved_namespace=namespace, involved_name=name)
    return {
        "nav": "cronjobs",
        "cron": cron,
        "next": [] if cron.suspend else next_runs(cron.schedule, cron.time_zone, 5),
        "active": len((cron.status or {}).get("active") or []),
        "history": cronjob_history(cron),
        "events": list(events.order_by("-last_timestamp", "-id")[:20]),
        "can_write": can_write,
    }


@login_required
def cronjob_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """A CronJob's page: schedule and next runs, its jobs (history), and Suspend / Resume / Run now. Once it is
    deleted, its live regions and the page say who deleted it and when."""
    scope = get_scope(request)
    cron = scope.filter(CronJob.objects.all()).filter(namespace=namespace, name=name).first()
    if cron is None:
        return gone.deleted_answer(request, scope, "CronJob", f"{namespace}/{name}")
    return page(
        request,
        "dashboard/cronjob_detail.html",
        _cronjob_context(cron, scope.can_write(cron.tenant_id)),
        {
            "summary": "dashboard/_cronjob_summary.html",
            "history": "dashboard/_cronjob_history.html",
            "actions": "dashboard/_cronjob_actions.html",
        },
    )


@login_required
@require_POST
def cronjob_action(request: HtmxHttpRequest, namespace: str, name: str) -> HttpResponse:
    """Suspend, resume or run a CronJob now through the workflow services (viewers get the services' 403)."""
    scope = get_scope(request)
    cron = get_object_or_404(scope.filter(CronJob.objects.all()), namespace=namespace, name=name)
    action = request.POST.get("action", "")
    if action not in CRON_ACTIONS:
        return render(
            request, "dashboard/_error.html", {"error": {"message": f"Unknown action {action!r}."}}, status=400
        )
    service, message = CRON_ACTIONS[action]
    try:
        done = service(scope.access, cron.namespace, cron.name)
    except ApiError as exc:
        return render(request, "dashboard/_error.html", {"error": error_info(exc)}, status=exc.code)
    text = message.format(key=cron.key, job=getattr(done, "name", ""))
    if action != "run" and getattr(done, "action", "") == "unchanged":
        text = f"{cron.key} already was {'suspended' if action == 'suspend' else 'running on its schedule'}."
    if not request.htmx:  # a plain form post (no JavaScript): back to the page, which shows the new state
        return redirect("dashboard:cronjob", namespace=cron.namespace, name=cron.name)
    response = render(request, "dashboard/_flash.html", {"message": text})
    response["HX-Trigger"] = "cronjob-changed"
    return response


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
    """Draw a JobFlow's DAG with each step's job phase. Once the flow is deleted, its live regions and the page say
    who deleted it and when."""
    scope = get_scope(request)
    flow = scope.filter(JobFlow.objects.all()).filter(namespace=namespace, name=name).first()
    if flow is None:
        return gone.deleted_answer(request, scope, "JobFlow", f"{namespace}/{name}")
    jobs = Job.objects.filter(namespace=namespace, controller_uid=flow.uid).values_list("name", "phase")
    prefix = f"{flow.name}-"
    phases = {job_name.removeprefix(prefix): phase for job_name, phase in jobs}
    context = {"nav": "jobflows", "flow": flow, "dag": dag_layout(flow, phases)}
    return page(
        request,
        "dashboard/jobflow_detail.html",
        context,
        {"dag": "dashboard/_jobflow_dag.html", "phase": "dashboard/_jobflow_phase.html"},
    )


#: The Kind filter's choices: every kind the services audit.
AUDIT_KINDS = [
    "Job",
    "Queue",
    "PodGroup",
    "Pod",
    "Node",
    "CronJob",
    "JobFlow",
    "JobTemplate",
    "PriorityClass",
    "SchedulerConfiguration",
    "Membership",
]


def audit_changes(before: Any, after: Any, limit: int = 8) -> list[str]:
    """``spec.weight 2 → 6``: the spec fields an update changed (from the entry's before/after manifests)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    old, new = _flatten(before.get("spec") or {}), _flatten(after.get("spec") or {})
    dash, arrow = "\u2013", "\u2192"
    lines = [
        f"{key} {old.get(key, dash)} {arrow} {new.get(key, dash)}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    return lines[:limit] + ([f"and {len(lines) - limit} more"] if len(lines) > limit else [])


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list):
        return {prefix: f"[{len(value)} items]"} if len(str(value)) > 60 else {prefix: str(value)}
    return {prefix: str(value)}


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    """The audit log of the shown tenants (platform admins also see cluster-scoped changes)."""
    scope = get_scope(request)
    qs = AuditEntry.objects.only(
        "id", "at", "actor_name", "action", "kind", "object_key", "source", "message", "tenant_id", "before", "after"
    )
    ids = scope.tenant_ids
    if ids is not None:
        qs = qs.filter(tenant_id__in=ids)
    kind = request.GET.get("kind", "")
    if kind:
        qs = qs.filter(kind=kind)
    page_obj = Paginator(qs.order_by("-at", "-id"), 50).get_page(request.GET.get("page"))
    for entry in page_obj.object_list:
        entry.changes = audit_changes(entry.before, entry.after) if entry.action == "update" else []
    return page(
        request,
        "dashboard/audit.html",
        {
            "nav": "audit",
            "page_obj": page_obj,
            "kind": kind,
            "kinds": AUDIT_KINDS,
        },
        {"table": "dashboard/_audit_table.html"},
    )
