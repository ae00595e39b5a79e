"""Nodes (capacity, allocation, conditions, failure injection) and the scheduler configuration."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard import cluster
from volcanoweb.dashboard.queries import last_scheduling_run
from volcanoweb.dashboard.resources import MAIN_RESOURCES, percent
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import error_info, page
from volcanoweb.jobs.models import Pod
from volcanoweb.scheduling import services as scheduling
from volcanoweb.scheduling.models import SchedulerProfile


@login_required
def nodes(request: HttpRequest) -> HttpResponse:
    """Render every node with per-resource usage bars."""
    scope = get_scope(request)
    items = cluster.list_nodes()
    rows = []
    jobs_on = _jobs_by_node(scope) if scope.access.platform_admin else {}
    for node in sorted(items, key=lambda n: (n.pool, n.name)):
        bars = [
            {
                "label": label,
                "name": name,
                "used": node.allocated.get(name, 0.0),
                "total": node.allocatable.get(name, 0.0),
                "pct": percent(node.allocated.get(name, 0.0), node.allocatable.get(name, 0.0)),
                "unit": unit,
            }
            for name, label, unit in MAIN_RESOURCES
            if node.allocatable.get(name) or node.allocated.get(name)
        ]
        rows.append({"node": node, "bars": bars, "fail_confirm": _fail_confirm(node.name, jobs_on.get(node.name, {}))})
    context = {
        "nav": "nodes",
        "rows": rows,
        "can_inject": scope.access.platform_admin,
        "actions": cluster.ACTIONS,
    }
    return page(request, "dashboard/nodes.html", context, {"grid": "dashboard/_node_grid.html"})


def _jobs_by_node(scope: Any) -> dict[str, dict[str, int]]:
    """node name -> {job key: live pods on it} (what failing the node would evict)."""
    out: dict[str, dict[str, int]] = {}
    rows = (
        Pod.objects.filter(phase__in=("Pending", "Running"), deletion_timestamp__isnull=True)
        .exclude(node_name="")
        .values_list("node_name", "namespace", "job__name")
    )
    for node_name, namespace, job_name in rows:
        key = f"{namespace}/{job_name}" if job_name else f"{namespace} (pods without a job)"
        per = out.setdefault(node_name, {})
        per[key] = per.get(key, 0) + 1
    return out


def _fail_confirm(name: str, jobs: dict[str, int]) -> str:
    pods = sum(jobs.values())
    if not pods:
        return f"Fail node {name}? It becomes NotReady; no pods run on it now, so nothing is evicted."
    listed = ", ".join(f"{key} ({n})" for key, n in sorted(jobs.items())[:6])
    more = f" and {len(jobs) - 6} more jobs" if len(jobs) > 6 else ""
    return (
        f"Fail node {name}? It becomes NotReady and its {pods} pod{'s' if pods != 1 else ''} are evicted: "
        f"{listed}{more}. Each job's policies decide what follows (restart, abort, a retry)."
    )


@login_required
@require_POST
def node_inject(request: HttpRequest, name: str) -> HttpResponse:
    """Failure injection on a node (platform admins)."""
    scope = get_scope(request)
    if not scope.access.platform_admin:
        return render(
            request,
            "dashboard/_error.html",
            {"error": {"message": "Only platform admins can inject failures."}},
            status=403,
        )
    try:
        cluster.inject(scope.access, request.POST.get("action", ""), name)
    except LookupError as exc:
        return render(request, "dashboard/_error.html", {"error": {"message": str(exc)}}, status=409)
    except ApiError as exc:
        return render(request, "dashboard/_error.html", {"error": error_info(exc)}, status=exc.code)
    action = request.POST.get("action")
    message = (
        f"Node {name} failed: it is NotReady and its pods were evicted."
        if action == "fail"
        else f"Node {name} recovered: it is Ready again."
    )
    response = render(request, "dashboard/_flash.html", {"message": message})
    response["HX-Trigger"] = "nodes-changed"  # refresh the grid even when the live socket is down
    return response


@login_required
def scheduler_config(request: HttpRequest) -> HttpResponse:
    """Show the active configuration and its history; platform admins may save a new version."""
    scope = get_scope(request)
    error = None
    saved = None
    text = scheduling.active_yaml()
    if request.method == "POST":
        text = request.POST.get("yaml", "")
        try:
            outcome = scheduling.save_config(
                scope.access, text, comment=request.POST.get("comment", ""), source="dashboard"
            )
            saved = outcome.action
        except ApiError as exc:
            error = error_info(exc)
    context = {
        "nav": "scheduler",
        "text": text,
        "error": error,
        "saved": saved,
        "profile": scheduling.active_profile(),
        "history": list(SchedulerProfile.objects.select_related("created_by").order_by("-version")[:20]),
        "can_edit": scope.access.platform_admin,
        "run": last_scheduling_run(),
    }
    return page(request, "dashboard/scheduler.html", context)


@login_required
@require_POST
def scheduler_validate(request: HttpRequest) -> HttpResponse:
    """Validate a configuration with the core's parser (no save)."""
    try:
        config = scheduling.validate_config(request.POST.get("yaml", ""))
    except ApiError as exc:
        return render(request, "dashboard/_config_check.html", {"error": error_info(exc)})
    return render(request, "dashboard/_config_check.html", {"config": config})
