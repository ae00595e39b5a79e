"""Container logs of a job's pods: Kubernetes' log subresource (tail, previous container) or the sim's log.

The panel re-reads the log every two seconds while the pod is Pending or Running (``hx-trigger="every 2s"``)
and stops once it has finished, so a running pod's log streams into the page without a reload.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import BackendError, NotFound, Unavailable
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.jobs.models import Job, Pod

DEFAULT_TAIL = 200
MAX_TAIL = 5000
LIVE_PHASES = ("Pending", "Running")


def _containers(pod: Pod) -> list[str]:
    return [str(c.get("name")) for c in (pod.spec or {}).get("containers") or [] if isinstance(c, dict)] or ["main"]


def _bad(request: HttpRequest, field: str, message: str) -> HttpResponse:
    error = {"message": f"Invalid log request: {field}: {message}", "causes": [{"field": field, "message": message}]}
    response = render(request, "dashboard/_error.html", {"error": error}, status=400)
    response["HX-Retarget"] = "#flash"  # keep the log panel; the message goes to the page's flash area
    response["HX-Reswap"] = "innerHTML"
    return response


@login_required
def pod_log(request: HttpRequest, namespace: str, name: str, pod: str) -> HttpResponse:
    """The log panel (``?part=body``: only the refreshing log body) of one pod of a job the caller can read."""
    scope = get_scope(request)
    job = get_object_or_404(scope.filter(Job.objects.all()), namespace=namespace, name=name)
    row = get_object_or_404(Pod.objects.filter(job=job), name=pod)
    containers = _containers(row)
    container = request.GET.get("container") or containers[0]
    if container not in containers:
        return _bad(request, "container", f"pod {pod} has no container {container!r} (it has {', '.join(containers)})")
    raw_tail = request.GET.get("tail", str(DEFAULT_TAIL)).strip()
    if not raw_tail.isdigit() or not 1 <= int(raw_tail) <= MAX_TAIL:
        return _bad(request, "tail", f"must be a whole number of lines from 1 to {MAX_TAIL}, not {raw_tail!r}")
    tail = int(raw_tail)
    previous = request.GET.get("previous") in ("1", "true", "on")
    text, problem = "", ""
    try:
        text = get_backend().pod_log(namespace, pod, container=container, tail_lines=tail, previous=previous)
    except NotFound as exc:
        problem = (
            f"No earlier instance of container {container}: it has not restarted."
            if previous
            else f"The cluster has no log for this pod ({exc})."
        )
    except Unavailable as exc:
        problem = f"Logs are not available right now: {exc}"
    except BackendError as exc:
        problem = f"The cluster refused the log request: {exc}"
    live = row.phase in LIVE_PHASES and row.deletion_timestamp is None and not previous
    url = reverse("dashboard:pod-log", args=[namespace, name, pod])
    query = f"container={container}&tail={tail}{'&previous=1' if previous else ''}"
    context: dict[str, Any] = {
        "job": job,
        "pod": row,
        "containers": containers,
        "container": container,
        "tail": tail,
        "previous": previous,
        "text": text,
        "problem": problem,
        "live": live,
        "url": url,
        "body_url": f"{url}?{query}&part=body",
        "backend": get_backend().name,
    }
    template = "dashboard/_pod_log_body.html" if request.GET.get("part") == "body" else "dashboard/_pod_log.html"
    return render(request, template, context)
