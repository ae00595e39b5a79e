"""A Kubernetes API double: kmock 0.8's KubernetesEmulator plus the project's extension.

Plain kmock 0.8 serves discovery, a versioned object store and request
recording, but it ignores selectors and ``timeoutSeconds``,
has no uid/resourceVersion, no ``pods/binding`` or ``pods/eviction``
subresources, and drops watch events for objects created without
``metadata.namespace``. :class:`KubeEmulatorPlus` serves every request for a
Kubernetes resource itself, keeping objects in kmock's store (so
``emu.objects[resource('v1/pods'), 'ns', 'name']`` works for assertions) and
adding:

* namespace injection from the URL, ``uid``, ``creationTimestamp`` and a
  cluster-wide counter ``resourceVersion`` bumped on every change;
* 409 AlreadyExists on duplicate creation, 404 NotFound on missing objects;
* ``POST pods/{name}/binding``: sets ``spec.nodeName``, 409 if already bound;
* ``POST pods/{name}/eviction``: deletes the pod, or 429 when the pod name is
  in :attr:`KubeEmulatorPlus.eviction_blocked`;
* PATCH as merge patch (JSON merge / strategic merge treated alike, ``null``
  removes) or JSON patch (add/replace/remove), including ``/status``;
* equality label and field selectors (``=``, ``==``, ``!=``, comma-joined);
* watches with ``resourceVersion`` (replay from the event log; ERROR 410 when
  older than the compaction mark, see :meth:`compact`), ``timeoutSeconds``,
  and :meth:`drop_watches` to end every open stream (an API server restart);
* request recording and discovery stay kmock's.

Requests are handled without kmock's DSL matching, so a request costs the
same however many came before it.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import copy
import datetime
import json
import uuid
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering

Event = dict[str, Any]


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> aiohttp.web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return aiohttp.web.json_response(body, status=code)


def _get_path(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    return "" if value is None else str(value)


def _parse_selector(text: str) -> list[tuple[str, str, str]]:
    terms: list[tuple[str, str, str]] = []
    for raw in filter(None, (t.strip() for t in text.split(","))):
        for op in ("!=", "==", "="):
            key, sep, value = raw.partition(op)
            if sep:
                terms.append((key.strip(), "!=" if op == "!=" else "=", value.strip()))
                break
        else:
            terms.append((raw, "exists", ""))
    return terms


def _selected(obj: dict[str, Any], params: dict[str, str]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for key, op, value in _parse_selector(params.get("labelSelector", "")):
        actual = labels.get(key)
        if op == "exists" and actual is None:
            return False
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
    for key, op, value in _parse_selector(params.get("fieldSelector", "")):
        actual = _get_path(obj, key)
        if (op == "=" and actual != value) or (op == "!=" and actual == value):
            return False
    return True


def _merge(base: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    result = dict(base)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = obj
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                index = len(parent) if last == "-" else int(last)
                if op["op"] == "add":
                    parent.insert(index, op["value"])
                else:
                    parent[index] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last, None)
        elif op["op"] == "test":
            actual = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if actual != op["value"]:
                raise kmock.KubernetesError(422, "Invalid", "JSON patch test failed")
        else:
            raise kmock.KubernetesError(422, "Invalid", f"unsupported op {op['op']}")
    return obj


@attrs.define(kw_only=True)
class KubeEmulatorPlus(kmock.KubernetesEmulator):
    """KubernetesEmulator with the semantics a scheduler backend relies on."""

    #: Pods (namespace, name) whose eviction is refused with 429 (a PDB).
    eviction_blocked: set[tuple[str, str]] = attrs.field(factory=set)
    #: Container logs the kubelet would serve: (namespace, pod, container, previous) -> text.
    pod_logs: dict[tuple[str, str, str, bool], str] = attrs.field(factory=dict)
    _rv: int = attrs.field(default=0, init=False)
    _log: list[tuple[int, Any, Event]] = attrs.field(factory=list, init=False)
    _log_rvs: list[int] = attrs.field(factory=list, init=False)
    _compacted: int = attrs.field(default=0, init=False)
    _wakeup: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    _drop_generation: int = attrs.field(default=0, init=False)
    #: Watch streams currently open (tests wait for them before breaking them).
    open_watches: int = attrs.field(default=0, init=False)
    #: While set (the server is shutting down), watch streams end at once.
    closing: bool = attrs.field(default=False, init=False)

    # -------------------------------------------------------------- control

    @property
    def resource_version(self) -> int:
        return self._rv

    def compact(self) -> None:
        """Forget the event history: watches from older versions get 410 Gone."""
        self._compacted = self._rv

    def drop_watches(self) -> None:
        """End every open watch stream now (call in the server's loop)."""
        self._drop_generation += 1
        self._signal()

    def _signal(self) -> None:
        wakeup, self._wakeup = self._wakeup, asyncio.Event()
        wakeup.set()

    # -------------------------------------------------------------- dispatch

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource is None or request.resource.plural is None:
            return await super()._handle(request)
        try:
            method = request.method.value.upper()
            sub = request.subresource
            if method == "POST" and request.name is None:
                return self._create(request)
            if method == "POST" and sub == "binding":
                return self._bind(request)
            if method == "POST" and sub == "eviction":
                return self._evict(request)
            if method == "GET" and sub == "log":
                return self._pod_log(request)
            if method == "GET" and request.params.get("watch") in ("true", "1"):
                return await self._watch(request)
            if method == "GET" and request.name is None:
                return self._list(request)
            if method == "GET" and sub in (None, "status"):
                return aiohttp.web.json_response(self._get(request).raw)
            if method == "PATCH" and sub in (None, "status"):
                return self._patch(request)
            if method == "DELETE" and request.name is not None:
                return self._delete(request)
        except kmock.KubernetesError as exc:
            return _status(exc.status, exc.reason or "Error", exc.message or "")
        return await super()._handle(request)

    def _pod_log(self, request: rendering.Request) -> aiohttp.web.Response:
        """The log subresource: container, previous and tailLines as the API server reads them."""
        self._get(request)  # 404 for a missing pod
        params = request.params
        previous = params.get("previous") in ("true", "True", "1")
        key = (request.namespace, request.name, params.get("container", "main"), previous)
        if key not in self.pod_logs:
            return _status(400, "BadRequest", f'previous terminated container "{key[2]}" not found')
        lines = self.pod_logs[key].splitlines(keepends=True)
        if "tailLines" in params:
            lines = lines[-int(params["tailLines"]) :] if int(params["tailLines"]) else []
        return aiohttp.web.Response(text="".join(lines), content_type="text/plain")

    # -------------------------------------------------------------- helpers

    def _key(self, request: rendering.Request, name: str | None = None) -> tuple[Any, Any, Any]:
        return (request.resource, request.namespace, name or request.name)

    def _get(self, request: rendering.Request) -> kmock.Object:
        key = self._key(request)
        if key not in self._objects or self._objects[key].deleted:
            plural = request.resource.plural if request.resource else "objects"
            raise kmock.KubernetesError(404, "NotFound", f'{plural} "{request.name}" not found')
        return self._objects[key]

    def _record(self, resource: Any, type: str, obj: dict[str, Any]) -> None:
        event = {"type": type, "object": copy.deepcopy(obj)}
        self._log.append((self._rv, resource, event))
        self._log_rvs.append(self._rv)
        self._signal()

    def _bump(self, obj: dict[str, Any]) -> None:
        self._rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)

    # -------------------------------------------------------------- verbs

    def _create(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        obj = copy.deepcopy(request.data or {})
        meta = obj.setdefault("metadata", {})
        if request.namespace is not None:
            meta["namespace"] = request.namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        key = self._key(request, meta.get("name"))
        if key in self._objects and not self._objects[key].deleted:
            plural = request.resource.plural if request.resource else "objects"
            raise kmock.KubernetesError(409, "AlreadyExists", f'{plural} "{meta.get("name")}" already exists')
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        if request.resource is not None and request.resource.plural == "pods":
            obj.setdefault("status", {}).setdefault("phase", "Pending")
            obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
        self._bump(obj)
        if key in self._objects:
            self._objects[key].create(obj)
        else:
            self._objects[key] = obj
        self._record(request.resource, "ADDED", obj)
        return aiohttp.web.json_response(obj, status=201)

    def _store(self, request: rendering.Request, obj: dict[str, Any], type: str) -> None:
        self._bump(obj)
        self._objects[self._key(request)].create(obj)
        self._record(request.resource, type, obj)

    def _bind(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        pod = self._get(request).raw
        target = (request.data or {}).get("target", {}).get("name")
        if not target:
            raise kmock.KubernetesError(400, "BadRequest", "binding target is required")
        if pod.get("spec", {}).get("nodeName"):
            raise kmock.KubernetesError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{request.name}": '
                f"pod {request.name} is already assigned to node "
                f'"{pod["spec"]["nodeName"]}"',
            )
        pod = copy.deepcopy(pod)
        pod.setdefault("spec", {})["nodeName"] = target
        self._store(request, pod, "MODIFIED")
        return _status(201, "", "")

    def _evict(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        self._get(request)
        if (request.namespace, request.name) in self.eviction_blocked:
            raise kmock.KubernetesError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            )
        self._remove(request)
        return _status(201, "", "")

    def _patch(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        current = self._get(request).raw
        if isinstance(request.data, list):
            updated = _json_patch(current, request.data)
        else:
            updated = _merge(current, request.data or {})
        self._store(request, updated, "MODIFIED")
        return aiohttp.web.json_response(updated)

    def _delete(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        self._get(request)
        return aiohttp.web.json_response(self._remove(request))

    def _remove(self, request: rendering.Request) -> dict[str, Any]:
        obj = copy.deepcopy(self._get(request).raw)
        self._bump(obj)
        self._objects[self._key(request)].delete()
        self._record(request.resource, "DELETED", obj)
        return obj

    def _matching(self, request: rendering.Request) -> list[dict[str, Any]]:
        items = []
        for (resource, namespace, _), stored in self._objects.items():
            if resource != request.resource or stored.deleted:
                continue
            if request.namespace is not None and namespace != request.namespace:
                continue
            if _selected(stored.raw, request.params):
                items.append(copy.deepcopy(stored.raw))
        return items

    def _list(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        body = {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": str(self._rv)},
            "items": self._matching(request),
        }
        return aiohttp.web.json_response(body)

    def _wanted(self, request: rendering.Request, resource: Any, event: Event) -> bool:
        if resource != request.resource:
            return False
        obj = event["object"]
        if request.namespace is not None and obj.get("metadata", {}).get("namespace") != request.namespace:
            return False
        if request.name is not None and obj.get("metadata", {}).get("name") != request.name:
            return False
        return _selected(obj, request.params)

    async def _watch(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        assert request._raw_request is not None
        response = aiohttp.web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request._raw_request)

        async def send(event: Event) -> None:
            await response.write(json.dumps(event).encode() + b"\n")

        since = request.params.get("resourceVersion", "")
        if since in ("", "0"):
            for obj in self._matching(request):
                await send({"type": "ADDED", "object": obj})
            position = len(self._log)
        elif int(since) < self._compacted:
            await send(
                {
                    "type": "ERROR",
                    "object": {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "reason": "Expired",
                        "message": f"too old resource version: {since} ({self._compacted})",
                        "code": 410,
                    },
                }
            )
            await response.write_eof()
            return response
        else:
            position = bisect.bisect_right(self._log_rvs, int(since))

        loop = asyncio.get_running_loop()
        timeout = float(request.params.get("timeoutSeconds", "1800"))
        deadline = loop.time() + timeout
        generation = self._drop_generation
        self.open_watches += 1
        try:
            while generation == self._drop_generation and not self.closing:
                wakeup = self._wakeup
                while position < len(self._log):
                    _, resource, event = self._log[position]
                    position += 1
                    if self._wanted(request, resource, event):
                        await send(event)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), remaining)
            await response.write_eof()
        except ConnectionResetError:
            pass
        finally:
            self.open_watches -= 1
        return response
