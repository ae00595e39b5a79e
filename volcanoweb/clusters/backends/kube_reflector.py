"""The Kubernetes backend's reflectors: one background thread per kind (pods, nodes) that lists, then
watches from the list's resourceVersion with ``timeoutSeconds``, keeps a cache, and reports changes to
its owner (:class:`~.kubernetes.KubernetesBackend`).

A stream that ends is re-opened from the last resourceVersion seen; 410 Gone, connection loss and every
``resync_period`` trigger a relist whose differences with the cache are reported as ordinary
ADDED/MODIFIED/DELETED events. While the API server is unreachable a reflector retries with capped
exponential backoff and marks its kind unavailable; it never dies.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from .base import BackendEvent, EventType, NodeInfo, PodInfo, Unavailable
from .kube_wire import TRANSPORT_ERRORS, translate_error

log = logging.getLogger("volcanoweb.clusters.backends.kubernetes")

Kind = Literal["pod", "node"]


def _interrupt(response: Any) -> None:
    """Unblock a thread reading a streaming response (close alone does not)."""
    connection = getattr(response, "connection", None)
    sock = getattr(connection, "sock", None)
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        response.close()
    except Exception:  # best effort, from another thread
        pass


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


# ---------------------------------------------------------------- reflector


class Owner(Protocol):
    """What a reflector needs of the backend that owns it (:class:`~.kubernetes.KubernetesBackend`): its
    timings, where to report changes and whether its kind is reachable."""

    backoff: tuple[float, float]
    resync_period: float
    watch_timeout: int
    request_timeout: float

    def _emit(self, events: list[BackendEvent]) -> None: ...

    def _set_available(self, kind: str, error: str | None) -> None: ...


class Reflector:
    """List + watch one kind into a cache, reporting changes to the backend."""

    def __init__(
        self,
        backend: Owner,
        kind: Kind,
        list_fn: Callable[..., Any],
        convert: Callable[[dict[str, Any]], PodInfo | NodeInfo],
    ) -> None:
        self.backend = backend
        self.kind: Kind = kind
        self.list_fn = list_fn
        self.convert = convert
        self.cache: dict[tuple[str, str], PodInfo | NodeInfo] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.lists = 0
        self.watches = 0
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"kube-reflector-{kind}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            _interrupt(response)
        self._thread.join(timeout=10)

    def _key(self, obj: PodInfo | NodeInfo) -> tuple[str, str]:
        return (obj.namespace, obj.name) if isinstance(obj, PodInfo) else ("", obj.name)

    def _run(self) -> None:
        backend = self.backend
        delay = backend.backoff[0]
        need_list = True
        last_list = 0.0
        while not self._stop.is_set():
            try:
                if need_list or time.monotonic() - last_list >= backend.resync_period:
                    self._relist()
                    last_list = time.monotonic()
                    need_list = False
                backend._set_available(self.kind, None)
                delay = backend.backoff[0]
                self._watch(deadline=last_list + backend.resync_period)
            except _Gone:
                need_list = True
            except TRANSPORT_ERRORS as exc:
                if self._stop.is_set():
                    break
                need_list = True
                error = translate_error(exc, f"{self.kind} reflector")
                if isinstance(error, Unavailable):
                    backend._set_available(self.kind, str(error))
                log.warning("%s; retrying in %.1fs", error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, backend.backoff[1])
            except Exception:  # a reflector must never die
                if self._stop.is_set():
                    break
                log.exception("%s reflector failed; relisting", self.kind)
                need_list = True
                self._stop.wait(delay)
                delay = min(delay * 2, backend.backoff[1])

    def _relist(self) -> None:
        response = self.list_fn(_preload_content=False, _request_timeout=self.backend.request_timeout)
        data = json.loads(response.data)
        self.lists += 1
        fresh: dict[tuple[str, str], PodInfo | NodeInfo] = {}
        for item in data.get("items") or []:
            obj = self.convert(item)
            fresh[self._key(obj)] = obj
        events: list[BackendEvent] = []
        for key, obj in fresh.items():
            old = self.cache.get(key)
            if old is None:
                events.append(BackendEvent(self.kind, "ADDED", obj))
            elif old.resource_version != obj.resource_version:
                events.append(BackendEvent(self.kind, "MODIFIED", obj))
        for key, old in self.cache.items():
            if key not in fresh:
                events.append(BackendEvent(self.kind, "DELETED", old))
        self.cache = fresh
        self.resource_version = str((data.get("metadata") or {}).get("resourceVersion", ""))
        self.backend._emit(events)
        self.synced.set()

    def _watch(self, deadline: float) -> None:
        backend = self.backend
        timeout = max(1, int(min(backend.watch_timeout, deadline - time.monotonic())))
        response = self.list_fn(
            watch=True,
            resource_version=self.resource_version,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=(backend.request_timeout, timeout + backend.request_timeout),
        )
        self._response = response
        self.watches += 1
        try:
            if self._stop.is_set():  # stop() ran while the request was in flight
                return
            for line in iter_resp_lines(response):
                if self._stop.is_set():
                    return
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                self._apply(event)
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def _apply(self, event: dict[str, Any]) -> None:
        type_ = event.get("type")
        raw = event.get("object") or {}
        if type_ == "ERROR":
            if raw.get("code") == 410:
                raise _Gone(raw.get("message", ""))
            raise ApiException(status=raw.get("code", 500), reason=raw.get("message", ""))
        rv = str((raw.get("metadata") or {}).get("resourceVersion", ""))
        if type_ == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        obj = self.convert(raw)
        key = self._key(obj)
        self.resource_version = rv or self.resource_version
        old = self.cache.get(key)
        kind: EventType
        if type_ == "DELETED":
            self.cache.pop(key, None)
            kind = "DELETED"
        else:
            if old is not None and old.resource_version == obj.resource_version:
                return
            self.cache[key] = obj
            kind = "ADDED" if old is None else "MODIFIED"
        self.backend._emit([BackendEvent(self.kind, kind, obj)])
