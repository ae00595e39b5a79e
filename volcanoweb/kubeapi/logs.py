"""``GET /api/v1/namespaces/{ns}/pods/{name}/log``: the ``pods/log`` subresource (``kubectl logs``).

The same source as the dashboard's log panel: the cluster backend's ``pod_log`` (the simulated cluster's
log, or a real cluster's through the official client). Parameters as on kube-apiserver: ``container``,
``follow``, ``previous``, ``tailLines``, ``sinceSeconds``/``sinceTime``, ``timestamps`` and ``limitBytes``;
errors are kube-apiserver's 400s (an unknown container, no previous instance, a container waiting to start).

``follow=true`` streams: a real cluster's log as the kubelet sends it; the simulated cluster's log re-read
every :data:`FOLLOW_POLL_SECONDS` (new lines only) until the container ends or :data:`FOLLOW_MAX_SECONDS`.
On the simulated cluster ``sinceSeconds`` and ``timestamps`` use each line's simulated time mapped to the
wall clock through the clock's speed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from rest_framework.exceptions import NotAcceptable
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend, Unavailable
from volcanoweb.clusters.backends.base import NotFound as BackendNotFound
from volcanoweb.core.errors import ApiError, BadRequest, Cause
from volcanoweb.jobs.models import Pod
from volcanoweb.kubeapi import views
from volcanoweb.kubeapi.registry import RESOURCES

FOLLOW_POLL_SECONDS = 1.0
FOLLOW_MAX_SECONDS = 4 * 3600
MAX_TAIL_LINES = 100_000
PODS = next(r for r in RESOURCES if r.plural == "pods")
TEXT = "text/plain; charset=utf-8"


class ServiceUnavailable(ApiError):
    """503: the cluster keeps no logs or cannot be reached."""

    code = 503
    reason = "ServiceUnavailable"


def containers_of(pod: Pod) -> list[str]:
    """Return the pod's container names (its spec's order; ``main`` for a spec without containers)."""
    names = [str(c.get("name")) for c in (pod.spec or {}).get("containers") or [] if isinstance(c, dict)]
    return names or ["main"]


def _integer(params: Any, key: str, minimum: int) -> int | None:
    raw = params.get(key)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{key} must be an integer", causes=[Cause(key, f"Invalid value: {raw!r}")]) from None
    if value < minimum:
        message = f"Invalid value: {value}: must be greater than or equal to {minimum}"
        raise BadRequest(f"{key}: {message}", causes=[Cause(key, message, "FieldValueInvalid")])
    return value


def _flag(params: Any, key: str) -> bool:
    return str(params.get(key, "")).lower() in ("true", "1")


def _since(params: Any) -> float | None:
    """Return the epoch time of ``sinceSeconds`` or ``sinceTime`` (not both), or None."""
    seconds = _integer(params, "sinceSeconds", 1)
    raw_time = params.get("sinceTime")
    if seconds is not None and raw_time:
        raise BadRequest(
            "at most one of sinceTime or sinceSeconds may be specified",
            causes=[Cause("sinceSeconds", "Forbidden: only one of sinceTime or sinceSeconds", "FieldValueForbidden")],
        )
    if seconds is not None:
        return time.time() - seconds
    if raw_time:
        try:
            return dt.datetime.fromisoformat(str(raw_time).replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise BadRequest(
                "sinceTime must be an RFC 3339 time", causes=[Cause("sinceTime", f"Invalid value: {raw_time!r}")]
            ) from None
    return None


def _stamp(epoch: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


class LogFilter:
    """``sinceSeconds``/``sinceTime`` and ``timestamps`` applied line by line (a line without a time of its own
    takes the time of the line before it, or now)."""

    def __init__(self, backend: ClusterBackend, since: float | None, timestamps: bool) -> None:
        self.backend, self.since, self.timestamps = backend, since, timestamps
        self.last: float | None = None

    def __call__(self, line: str) -> str | None:
        if self.since is None and not self.timestamps:
            return line
        at = self.backend.log_wall_time(line)
        if at is None:
            at = self.last if self.last is not None else time.time()
        self.last = at
        if self.since is not None and at < self.since:
            return None
        return f"{_stamp(at)} {line}" if self.timestamps else line


class PodLogView(views.ResourceView):
    """``pods/{name}/log``: the container log as ``text/plain`` (streamed with ``follow=true``)."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # Clients ask for text/plain (the official client) or */*: the log is text whatever JSON/YAML the
        # views render; errors are JSON Status bodies.
        try:
            return super().perform_content_negotiation(request, force)
        except NotAcceptable:
            renderer = JSONRenderer()
            return renderer, renderer.media_type

    def get(self, request: Request, **kwargs: Any) -> HttpResponseBase:
        namespace, name = str(kwargs["namespace"]), str(kwargs["name"])
        access = self.access(request)
        pod: Pod = self.find(access, PODS, namespace, name)
        params = request.query_params
        containers = containers_of(pod)
        container = params.get("container") or ""
        if not container:
            if len(containers) > 1:
                raise BadRequest(
                    f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
                )
            container = containers[0]
        if container not in containers:
            raise BadRequest(f"container {container} is not valid for pod {name}")
        follow, previous = _flag(params, "follow"), _flag(params, "previous")
        tail = _integer(params, "tailLines", 0)
        limit = _integer(params, "limitBytes", 1)
        keep = LogFilter(backend := get_backend(), _since(params), _flag(params, "timestamps"))
        if tail is not None:
            tail = min(tail, MAX_TAIL_LINES)
        if follow and not previous and pod.phase in ("Pending", "Running") and pod.deletion_timestamp is None:
            return self.stream(request, backend, pod, container, tail, keep, limit)
        text = _read(backend, pod, container, tail, previous)
        lines = [kept for line in text.splitlines() if (kept := keep(line)) is not None]
        body = "".join(f"{line}\n" for line in lines).encode()
        if limit is not None:
            body = body[:limit]
        return HttpResponse(body, content_type=TEXT)

    def stream(
        self,
        request: Request,
        backend: ClusterBackend,
        pod: Pod,
        container: str,
        tail: int | None,
        keep: LogFilter,
        limit: int | None,
    ) -> StreamingHttpResponse:
        follows = type(backend).follow_pod_log is not ClusterBackend.follow_pod_log
        key = (pod.namespace, pod.name)

        def lines() -> Iterator[str]:
            if follows:
                yield from backend.follow_pod_log(*key, container=container, tail_lines=tail)
                return
            yield from _poll(backend, key, container, tail, time.sleep)

        def encoded(source: Iterator[str]) -> Iterator[bytes]:
            budget = limit
            for line in source:
                kept = keep(line)
                if kept is None:
                    continue
                data = f"{kept}\n".encode()
                if budget is not None:
                    data, budget = data[:budget], budget - len(data)
                yield data
                if budget is not None and budget <= 0:
                    return

        if isinstance(request._request, ASGIRequest):
            response = StreamingHttpResponse(_async(encoded(lines())), content_type=TEXT)
        else:
            response = StreamingHttpResponse(encoded(lines()), content_type=TEXT)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


def _read(backend: ClusterBackend, pod: Pod, container: str, tail: int | None, previous: bool) -> str:
    try:
        return backend.pod_log(pod.namespace, pod.name, container=container, tail_lines=tail, previous=previous)
    except BackendNotFound as exc:
        if previous:
            raise BadRequest(f'previous terminated container "{container}" in pod "{pod.name}" not found') from exc
        raise BadRequest(f'container "{container}" in pod "{pod.name}" is waiting to start: no log yet') from exc
    except Unavailable as exc:
        raise ServiceUnavailable(f"the cluster keeps no log for pod {pod.name}: {exc}") from exc
    except BackendError as exc:
        raise ServiceUnavailable(f"the cluster refused the log request for pod {pod.name}: {exc}") from exc


def _poll(
    backend: ClusterBackend,
    key: tuple[str, str],
    container: str,
    tail: int | None,
    sleep: Callable[[float], None],
    max_seconds: float = FOLLOW_MAX_SECONDS,
) -> Iterator[str]:
    """Re-read a backend's whole log and yield the lines not sent yet, until the container ends.

    As on Kubernetes, the stream ends with the container instance: when it has finished, restarted (a new
    instance: ``kubectl logs -f`` again follows it) or the pod is gone. A line already sent is not sent again
    when the simulator rewrites it (a progress line loses its planned duration once the container ended).
    """
    sent: list[str] | None = None
    restarts: int | None = None
    deadline = time.monotonic() + max_seconds
    while True:
        try:
            info = backend.get_pod(*key)
            lines = backend.pod_log(*key, container=container).splitlines()
        except BackendError:
            return  # the pod is gone: the stream ends, as the kubelet's does
        if restarts is not None and info.restart_count != restarts:
            return
        restarts = info.restart_count
        if sent is None:
            yield from (lines[-tail:] if tail else []) if tail is not None else lines
        else:
            yield from lines[_unsent(sent, lines) :]
        sent = lines
        if info.finished or info.deleting or time.monotonic() >= deadline:
            return
        sleep(FOLLOW_POLL_SECONDS)


def _unsent(sent: list[str], lines: list[str]) -> int:
    """Return the index of the first line of ``lines`` not sent yet: the first that differs from what was sent
    (one line the prefix of the other counts as the same), or the end of what was sent."""
    for index, (old, new) in enumerate(zip(sent, lines, strict=False)):
        if not (old.startswith(new) or new.startswith(old)):
            return index
    return len(sent)


async def _async(source: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Drive a blocking iterator (database reads, sleeps) from a worker thread, one chunk at a time."""
    step = sync_to_async(lambda: next(source, None), thread_sensitive=False)
    while True:
        chunk = await step()
        if chunk is None:
            return
        yield chunk
        await asyncio.sleep(0)
