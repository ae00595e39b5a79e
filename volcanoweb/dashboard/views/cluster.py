"""Nodes (capacity, allocation, conditions, failure injection) and the scheduler configuration."""

from __future__ import annotations

import difflib
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from scheduler.config import PRODUCT_CONFIG_YAML
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
        on_node = jobs_on.get(node.name, {})
        rows.append(
            {
                "node": node,
                "bars": bars,
                "fail_confirm": _fail_confirm(node.name, on_node),
                "cordon_confirm": (
                    f"Cordon node {node.name}? The scheduler places no new pods on it; the "
                    f"{sum(on_node.values())} pod(s) running there keep running. Uncordon undoes it."
                ),
            }
        )
    topology = [
        {
            "row": h,
            "resources": [
                {"name": name, "label": label, "free": h.free.get(name, 0.0), "total": h.total.get(name, 0.0)}
                for name, label, _unit in MAIN_RESOURCES
                if h.total.get(name)
            ],
        }
        for h in cluster.topology_tree(items)
    ]
    context = {
        "nav": "nodes",
        "rows": rows,
        "topology": topology,
        "can_inject": scope.access.platform_admin,
    }
    return page(
        request,
        "dashboard/nodes.html",
        context,
        {"grid": "dashboard/_node_grid.html", "topology": "dashboard/_topology_tree.html"},
    )


@login_required
def node_pods(request: HttpRequest, name: str) -> HttpResponse:
    """The pods bound to one node (Pending or Running, not being deleted): those of the viewer's tenants are
    listed with their job, phase and requests; other tenants' pods are only counted."""
    scope = get_scope(request)
    on_node = cluster.bound_pods().filter(node_name=name)
    readable = scope.tenant_ids
    shown = on_node if readable is None else on_node.filter(tenant_id__in=readable)
    hidden = 0 if readable is None else on_node.exclude(tenant_id__in=readable).count()
    rows = []
    for pod in shown.select_related("job").order_by("namespace", "name")[:500]:
        requests = pod.requests if isinstance(pod.requests, dict) else {}
        rows.append(
            {
                "pod": pod,
                "resources": [(requests[key], key, unit) for key, _label, unit in MAIN_RESOURCES if requests.get(key)],
            }
        )
    return render(request, "dashboard/_node_pods.html", {"node": name, "rows": rows, "hidden": hidden})


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
    action = request.POST.get("action", "")
    message = {
        "fail": f"Node {name} failed: it is NotReady and its pods were evicted.",
        "recover": f"Node {name} recovered: it is Ready again.",
        "cordon": f"Node {name} cordoned: no new pods are placed on it; its running pods stay. Uncordon to undo.",
        "uncordon": f"Node {name} uncordoned: the scheduler places pods on it again.",
    }[action]
    response = render(request, "dashboard/_flash.html", {"message": message})
    response["HX-Trigger"] = "nodes-changed"  # refresh the grid even when the live socket is down
    return response


def _diff(before: str, after: str, before_label: str, after_label: str) -> list[dict[str, str]]:
    """The unified diff of two configurations as lines with a kind (add, del, hunk, ctx) for styling."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), fromfile=before_label, tofile=after_label, lineterm="", n=2
    )
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        out.append({"kind": kind, "text": line})
    return out


def _history() -> list[dict[str, Any]]:
    """The last 20 versions, newest first, each with its diff against the version before it."""
    versions = list(SchedulerProfile.objects.select_related("created_by").order_by("-version")[:21])
    rows = []
    for i, profile in enumerate(versions[:20]):
        previous = versions[i + 1] if i + 1 < len(versions) else None
        before, label = (previous.yaml, f"v{previous.version}") if previous else (PRODUCT_CONFIG_YAML, "built-in")
        rows.append(
            {"profile": profile, "diff": _diff(before, profile.yaml, label, f"v{profile.version}"), "base": label}
        )
    return rows


@login_required
def scheduler_config(request: HttpRequest) -> HttpResponse:
    """Show the active configuration and its history (each version's diff against the one before it);
    platform admins may save a new version or make an earlier one active again (rollback)."""
    scope = get_scope(request)
    error = None
    saved = None
    text = scheduling.active_yaml()
    if request.method == "POST":
        before = text
        previous = scheduling.active_profile()
        try:
            if request.POST.get("rollback"):
                version = int(request.POST["rollback"])
                profile = scheduling.activate_version(scope.access, version, source="dashboard")
                text = profile.yaml
                saved = {
                    "title": f"Version {version} is active again",
                    "detail": f"replacing v{previous.version}" if previous else "replacing the built-in default",
                    "diff": _diff(before, text, "was active", f"v{version}"),
                }
            else:
                text = request.POST.get("yaml", "")
                outcome = scheduling.save_config(
                    scope.access, text, comment=request.POST.get("comment", ""), source="dashboard"
                )
                if outcome.action == "unchanged":
                    saved = {"title": "Nothing saved", "detail": "the text equals the active version", "diff": []}
                else:
                    new_version = outcome.object.get("version")
                    saved = {
                        "title": f"Saved version {new_version}, now active",
                        "detail": f"was v{previous.version}" if previous else "was the built-in default",
                        "diff": _diff(before, text, "was active", f"v{new_version}"),
                    }
        except (ValueError, KeyError):
            error = {"message": "Choose a stored version to roll back to."}
        except ApiError as exc:
            error = error_info(exc)
    context = {
        "nav": "scheduler",
        "text": text,
        "error": error,
        "saved": saved,
        "profile": scheduling.active_profile(),
        "history": _history(),
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
