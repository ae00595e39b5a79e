"""Dashboard pages of insights: a queue's history page, a job's timeline and suggestions, cycle downloads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from volcanoweb.core.errors import ApiError, NotFound
from volcanoweb.dashboard import gone
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.insights import effects, services, suggestions
from volcanoweb.insights.models import DecisionKind
from volcanoweb.queues.models import Queue

MAX_EFFECTS = 10
RANGES = {"1h": ("1h", None), "6h": ("6h", "1m"), "1d": ("1d", "5m"), "7d": ("7d", "1h"), "90d": ("90d", "1d")}


def _visible_queue(request: HttpRequest, name: str) -> Queue:
    queue = Queue.objects.filter(get_scope(request).queue_q(), name=name).distinct().first()
    if queue is None:
        raise Http404("no such queue")
    return queue


@login_required
def queue_page(request: HttpRequest, name: str) -> HttpResponse:
    """Render a queue's page: allocated vs deserved vs guarantee over a range, change markers, time-to-start."""
    scope = get_scope(request)
    queue = _visible_queue(request, name)
    chosen = request.GET.get("range", "1h")
    if chosen not in RANGES:
        chosen = "1h"
    start, step = RANGES[chosen]
    history = services.queue_history(scope.access, queue.name, services.history_query(start, None, step))
    recent = history["markers"][-MAX_EFFECTS:]  # each costs a few simulated cycles
    marker_effects = {m["auditId"]: effects.effects_for(scope.access, m["auditId"]) for m in recent}
    context: dict[str, Any] = {
        "nav": "queues",
        "scope": scope,
        "queue": queue,
        "history": history,
        "ranges": list(RANGES),
        "range": chosen,
        "markers": [{**m, "effects": marker_effects.get(m["auditId"])} for m in history["markers"]],
        "tts": services.time_to_start(scope.access, queue.name),
    }
    return render(request, "insights/queue.html", context)


@login_required
def overview_history(request: HttpRequest) -> HttpResponse:
    """Render the overview's chart partial: each visible queue's CPU allocated vs deserved over the last hour."""
    scope = get_scope(request)
    names = list(
        Queue.objects.filter(scope.queue_q())
        .exclude(name="root")
        .distinct()
        .order_by("name")
        .values_list("name", flat=True)
    )[:12]
    query = services.history_query("1h", None, "1m")
    series = []
    for name in names:
        body = services.queue_history(scope.access, name, query)
        points = [
            {"time": p["time"], "allocated": p["allocated"].get("cpu", 0), "deserved": p["deserved"].get("cpu", 0)}
            for p in body["points"]
        ]
        if points:
            series.append({"queue": name, "points": points})
    data = {"from": query.start.isoformat(), "to": query.end.isoformat(), "series": series}
    return render(request, "insights/_overview.html", {"data": data})


@login_required
def job_insights(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Render the job's wait timeline (partial); with ``?suggest=1`` the verified suggestions instead."""
    scope = get_scope(request)
    try:
        job = services.get_readable_job(scope.access, namespace, name)
    except NotFound:
        found = gone.deleted(scope, "Job", f"{namespace}/{name}")
        if found is None:
            raise Http404("no such job") from None
        return gone.gone_fragment(request, found)
    if request.GET.get("suggest"):
        return render(request, "insights/_suggestions.html", {"job": job, "s": suggestions.suggest(scope.access, job)})
    return render(
        request, "insights/_timeline.html", {"job": job, "timeline": services.job_timeline(scope.access, job)}
    )


def _duration(seconds: float) -> str:
    """``86400`` → "1 day", ``7200`` → "2 hours", ``90`` → "90 seconds"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds:g} seconds"


@login_required
def cycles_page(request: HttpRequest) -> HttpResponse:
    """Render the kept cycles whose input can be downloaded (platform admins), filtered by job, queue, decision."""
    scope = get_scope(request)
    context: dict[str, Any] = {
        "nav": "scheduler",
        "scope": scope,
        "cycles": [],
        "kinds": DecisionKind.choices,
        "keep": settings.INSIGHTS_KEEP_CYCLE_INPUTS,
        "decided_retention": _duration(float(settings.INSIGHTS_DECIDED_CYCLE_RETENTION)),
    }
    try:
        where = services.cycle_filter(request.GET)
        context["where"] = where
        context["cycles"] = services.list_cycles(scope.access, where=where)
    except ApiError as exc:  # a tenant admin, or a bad filter: the page, in the product's shell, says why
        context["error"], context["forbidden"] = exc.message, exc.code == 403
        context["where"] = services.CycleFilter(request.GET.get("job", ""), request.GET.get("queue", ""))
        return render(request, "insights/cycles.html", context, status=exc.code)
    return render(request, "insights/cycles.html", context)


@login_required
def cycle_download(request: HttpRequest, cycle: int) -> HttpResponse:
    """Download one cycle's input file."""
    scope = get_scope(request)
    try:
        text = services.cycle_file(scope.access, cycle)
    except ApiError as exc:
        return HttpResponse(exc.message, status=exc.code, content_type="text/plain")
    response = HttpResponse(text.encode(), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="cycle-{cycle}.json"'
    return response
