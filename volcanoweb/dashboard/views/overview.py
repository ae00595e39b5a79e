"""The overview page: capacity, job phases, queue shares, events, scheduler health."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

from volcanoweb.dashboard import cluster, queries
from volcanoweb.dashboard.resources import CPU, GPU, MEMORY
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import page
from volcanoweb.scheduling.services import active_profile

FRAGMENTS = {
    "capacity": "dashboard/_capacity.html",
    "phases": "dashboard/_phases.html",
    "shares": "dashboard/_shares.html",
    "events": "dashboard/_events.html",
    "health": "dashboard/_health.html",
}


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    """Render the overview (or one fragment of it for a live refresh)."""
    scope = get_scope(request)
    fragment = request.GET.get("fragment")
    context: dict[str, object] = {"scope": scope, "nav": "overview"}
    capacity: dict[str, float] | None = None
    if fragment in (None, "capacity"):
        nodes = cluster.list_nodes()
        capacity, allocated = cluster.totals(nodes)
        context["resources"] = queries.resources_summary(capacity, allocated)
        context["node_count"] = len(nodes)
        context["nodes_ready"] = sum(1 for n in nodes if n.ready and not n.unschedulable)
    if fragment in (None, "phases"):
        counts = queries.phase_counts(scope)
        context["phases"] = counts
        context["job_total"] = sum(counts.values())
    if fragment in (None, "shares"):
        rows, _capacity = queries.queue_tree(scope, capacity=capacity)
        context["share_rows"] = [r for r in rows if r.queue.name != "root" and not r.children]
        context["share_dims"] = (CPU, MEMORY, GPU)
    if fragment in (None, "events"):
        context["events"] = queries.recent_events(scope)
    if fragment in (None, "health"):
        context["health"] = queries.cycle_health()
        context["profile"] = active_profile()
    return page(request, "dashboard/overview.html", context, FRAGMENTS)
