"""The scheduler extender's HTTP transport (httpx) and the product's plugin registry.

The core's extender plugin (``scheduler/plugins/extender.py``) does no I/O: it is given this transport, which
POSTs JSON and returns the decoded answer, raising ``ExtenderError`` for what Volcano's ``send`` treats as an
error: a connection failure or timeout, a status other than 200, an answer over 10 MiB (Go's
``http: request body too large``) or one that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from scheduler.plugins.extender import MAX_BODY, ExtenderError, with_transport
from scheduler.registry import Registry, default_registry

__all__ = ["PRODUCT_REGISTRY", "http_transport"]

_CLIENT = httpx.Client(headers={"Content-Type": "application/json"}, follow_redirects=False)


def http_transport(url: str, body: Mapping[str, Any], timeout: float) -> Any:
    """POST ``body`` as JSON to ``url`` within ``timeout`` seconds; the decoded JSON answer."""
    chunks: list[bytes] = []
    size = 0
    try:
        with _CLIENT.stream("POST", url, content=json.dumps(body).encode(), timeout=timeout) as resp:
            if resp.status_code != httpx.codes.OK:
                raise ExtenderError(f"failed POST with extender at URL {url}, code {resp.status_code}")
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > MAX_BODY:
                    raise ExtenderError("http: request body too large")
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise ExtenderError(f"POST {url}: {exc}") from exc
    try:
        return json.loads(b"".join(chunks) or b"null")
    except ValueError as exc:
        raise ExtenderError(f"POST {url}: the answer is not JSON: {exc}") from exc


def _registry() -> Registry:
    base = default_registry()
    plugins = dict(base.plugins)
    plugins["extender"] = with_transport(http_transport)
    return Registry(base.actions, plugins)


#: The built-in actions and plugins, the extender calling out over HTTP.
PRODUCT_REGISTRY = _registry()
