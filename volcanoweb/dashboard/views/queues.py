"""Queues: the hierarchy with shares, who uses a queue, in-place edit with a what-if preview, open/close."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard import cluster, queries
from volcanoweb.dashboard.forms import FIELDS, QueueEditForm
from volcanoweb.dashboard.resources import add_into
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import error_info, page
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.models import Queue

FRAGMENTS = {"tree": "dashboard/_queue_tree.html"}


@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    """Render the queue tree."""
    scope = get_scope(request)
    rows, capacity = queries.queue_tree(scope)
    return page(request, "dashboard/queues.html", {"nav": "queues", "rows": rows, "capacity": capacity}, FRAGMENTS)


def _visible_queue(request: HttpRequest, name: str) -> Queue:
    scope = get_scope(request)
    queue = Queue.objects.filter(scope.queue_q(), name=name).distinct().first()
    if queue is None:
        raise Http404("no such queue")
    return queue


@login_required
def queue_usage(request: HttpRequest, name: str) -> HttpResponse:
    """Render "who uses this queue" for one queue."""
    queue = _visible_queue(request, name)
    usage = queries.queue_usage(get_scope(request), queue)
    return render(request, "dashboard/_queue_usage.html", {"queue": queue, **usage})


def _row(rows: list[queries.QueueRow], name: str) -> queries.QueueRow | None:
    return next((r for r in rows if r.queue.name == name), None)


@login_required
def queue_edit(request: HttpRequest, name: str) -> HttpResponse:
    """GET: the edit form for a queue the caller manages. POST: save it through the queue service."""
    scope = get_scope(request)
    queue = _visible_queue(request, name)
    if not scope.can_manage_queue(queue):
        return render(
            request,
            "dashboard/_error.html",
            {"error": {"message": "Only admins of the queue's tenant can change it."}},
            status=403,
        )
    locked = queue_services.share_is_locked(scope.access, queue)
    if request.method != "POST":
        context = {"queue": queue, "form": QueueEditForm.for_queue(queue), "share_locked": locked}
        return render(request, "dashboard/_queue_edit.html", context)
    form = QueueEditForm(request.POST)
    if not form.is_valid():
        context = {"queue": queue, "form": form, "share_locked": locked}
        return render(request, "dashboard/_queue_edit.html", context, status=422)
    before = _spec_values(queue)
    try:
        queue_services.update_queue_spec(scope.access, queue.name, form.changes(queue), source="dashboard")
    except ApiError as exc:
        error = error_info(exc)
        if error["causes"]:  # the causes say it all; the long message would repeat them
            error["message"] = f"Queue {queue.name} was not saved:"
        context = {"queue": queue, "form": form, "error": error, "share_locked": locked}
        return render(request, "dashboard/_queue_edit.html", context, status=422)
    queue.refresh_from_db()
    usage = queries.queue_usage(scope, queue)
    changed = _changed_fields(before, queue)
    context = {"queue": queue, "saved": True, "changed": changed, **usage}
    response = render(request, "dashboard/_queue_usage.html", context)
    response["HX-Trigger"] = "queues-changed"
    return response


class _DryRun(Exception):
    """Raised to roll back a dry-run save."""


def _dry_run_save(scope: Any, queue: Queue, form: QueueEditForm) -> dict[str, Any] | None:
    """Run Save's own checks (the queue service, hierarchy included) and roll back; return the error or None."""
    try:
        with transaction.atomic():
            queue_services.update_queue_spec(scope.access, queue.name, form.changes(queue), source="dashboard")
            raise _DryRun
    except _DryRun:
        return None
    except ApiError as exc:
        return error_info(exc)


def _error_fields(error: dict[str, Any]) -> set[str]:
    """Form fields an API error is about (``spec.guarantee.resource.cpu`` -> ``guarantee_cpu``)."""
    fields: set[str] = set()
    for cause in error.get("causes") or []:
        path = str(cause.get("field") or "")
        text = f"{path} {cause.get('message') or ''}"
        for key, name, _label, _hint in FIELDS:
            for kind in ("guarantee", "capability"):
                if kind in path and (path.endswith(f".{name}") or f"{name}" in text.split(kind, 1)[-1]):
                    fields.add(f"{kind}_{key}")
        if path.endswith("weight"):
            fields.add("weight")
    return fields


def _changed_fields(before: dict[str, Any], queue: Queue) -> list[str]:
    """What a save changed, in words: ``weight 2 → 6``, ``memory guarantee none → 64Gi``."""
    after = _spec_values(queue)
    out = []
    for label, old in before.items():
        new = after.get(label)
        if old != new:
            out.append(f"{label} {old or 'none'} \u2192 {new or 'none'}")
    return out


def _spec_values(queue: Queue) -> dict[str, Any]:
    values: dict[str, Any] = {"weight": str(queue.weight)}
    guarantee = (queue.guarantee or {}) if isinstance(queue.guarantee, dict) else {}
    for _key, name, label, _hint in FIELDS:
        values[f"{label} guarantee"] = guarantee.get(name, "")
        values[f"{label} capability"] = (queue.capability or {}).get(name, "")
    return values


def weight_notes(queue: Queue, is_parent: bool) -> tuple[list[str], bool]:
    """What a queue's weight does under the active scheduler configuration, one line per plugin that reads
    queue weights or quotas, and whether the configuration gives parent queues a deserved share of their own
    (hierarchical capacity reads ``spec.deserved`` at every level)."""
    from volcanoweb.scheduling.cycles import active_config

    config, _version = active_config()
    plugins = {p.name: p for tier in config.tiers for p in tier.plugins}
    notes: list[str] = []
    if "proportion" in plugins:
        notes.append(
            "proportion: a parent's weight does nothing (the plugin is flat: the cluster is split among leaf "
            "queues by their own weights)."
            if is_parent
            else "proportion: the cluster is split among busy leaf queues in proportion to their weights, "
            "capped by capability and at least the guarantee (the preview above)."
        )
    drf = plugins.get("drf")
    if drf is not None and drf.hierarchy:
        notes.append(
            "drf (hierarchical): queues are ordered by dominant share divided by weight at every level, so a "
            f"{'parent' if is_parent else 'queue'} with twice the weight is served as if it used half as much "
            "as its siblings."
        )
    capacity = plugins.get("capacity")
    if capacity is not None:
        notes.append(
            "capacity: weight is not read; the queue's deserved, guarantee and capability decide"
            + (
                ", and a parent's deserved and capability bound what its children together may use."
                if capacity.hierarchy
                else "."
            )
        )
    if not notes:
        notes.append("No plugin of the active configuration reads queue weights.")
    return notes, capacity is not None and capacity.hierarchy


@login_required
@require_POST
def queue_preview(request: HttpRequest, name: str) -> HttpResponse:
    """Render the what-if: every queue's deserved share now and with the form's values."""
    scope = get_scope(request)
    queue = _visible_queue(request, name)
    form = QueueEditForm(request.POST)
    hints = form.hints()
    if not form.is_valid():
        context = {"queue": queue, "form": form, "invalid": True, "hints": hints, "bad_fields": set(form.errors)}
        return render(request, "dashboard/_queue_preview.html", context)
    save_error = _dry_run_save(scope, queue, form) if scope.can_manage_queue(queue) else None
    if save_error is not None:
        context = {"queue": queue, "form": form, "save_error": save_error, "hints": hints}
        context["bad_fields"] = _error_fields(save_error)
        return render(request, "dashboard/_queue_preview.html", context)
    capacity, demand = cluster.capacity(), queries.demand_by_queue()  # read once for both trees
    before, _ = queries.queue_tree(scope, include_hidden=True, capacity=capacity, demand=demand)
    after, _ = queries.queue_tree(
        scope, {queue.name: form.overrides()}, include_hidden=True, capacity=capacity, demand=demand
    )
    edited = _row(before, queue.name)
    notes, parents_deserve = weight_notes(queue, bool(edited is not None and edited.children))
    lines: list[dict[str, Any]] = []
    hidden: dict[str, Any] = {"count": 0, "old": {}, "new": {}, "old_now": {}, "new_now": {}}
    for old in before:
        new = _row(after, old.queue.name)
        if new is None or old.queue.name == "root":
            continue
        if old.children:  # a parent: shown with its own deserved where the configuration defines one
            if parents_deserve and old.visible and old.queue.deserved:
                lines.append({"row": old, "new": new, "changed": old.queue.name == queue.name, "parent": True})
            continue
        if old.visible:
            lines.append({"row": old, "new": new, "changed": old.queue.name == queue.name})
        else:  # other tenants' queues: only their total, never their names
            hidden["count"] += 1
            add_into(hidden["old"], old.deserved_busy)
            add_into(hidden["new"], new.deserved_busy)
            add_into(hidden["old_now"], old.shown_deserved)
            add_into(hidden["new_now"], new.shown_deserved)
    context = {
        "queue": queue,
        "lines": lines,
        "hidden": hidden,
        "capacity": capacity,
        "form": form,
        "hints": hints,
        "bad_fields": set(),
        "weight_notes": notes,
    }
    return render(request, "dashboard/_queue_preview.html", context)


@login_required
@require_POST
def queue_state(request: HttpRequest, name: str) -> HttpResponse:
    """Open or close a queue through the queue service."""
    scope = get_scope(request)
    queue = _visible_queue(request, name)
    action = request.POST.get("action")
    try:
        if action == "close":
            queue_services.close_queue(scope.access, queue.name, source="dashboard")
        elif action == "open":
            queue_services.open_queue(scope.access, queue.name, source="dashboard")
        else:
            return render(request, "dashboard/_error.html", {"error": {"message": "Unknown action."}}, status=400)
    except ApiError as exc:
        return render(request, "dashboard/_error.html", {"error": error_info(exc)}, status=exc.code)
    response = render(request, "dashboard/_flash.html", {"message": f"Queue {queue.name}: {action} requested."})
    response["HX-Trigger"] = "queues-changed"
    return response
