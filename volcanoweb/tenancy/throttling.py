"""Throttling of failed authentication (docs/adr/0025).

* Sign-ins (the login page, the admin's, ``vcctl login``) are counted by django-axes in the database, per
  username and per client address; a locked-out user or address gets :func:`lockout_response` (429 with
  ``Retry-After``), even with the right password, for ``LOGIN_LOCKOUT_SECONDS``. Axes logs each failure and
  lockout (logger ``axes``).
* Bearer tokens (``BearerTokenAuthentication``): :func:`check_token_failures` refuses every token from a
  client address (or for a user whose revoked or expired tokens are tried) with ``API_AUTH_FAILURE_LIMIT``
  failures in the current window of ``API_AUTH_FAILURE_WINDOW`` seconds; :func:`record_token_failure`
  counts one and logs it. The counters live in the cache (Redis in the stack mode), outside every
  transaction: a dry run's rollback does not forget them.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)


def client_address(request: Any) -> str | None:
    """The client's address: the connection's (forwarded headers are not trusted, as for ``/metrics``);
    None when the request has none that is an IP address (a test client's request, a management command)."""
    meta = getattr(request, "META", None) or {}
    try:
        return str(ipaddress.ip_address(str(meta.get("REMOTE_ADDR") or "").strip()))
    except ValueError:
        return None


def _is_api(request: HttpRequest) -> bool:
    path = getattr(request, "path", "") or ""
    return path.startswith(("/api/", "/apis/", "/api", "/apis"))


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: 429 with ``Retry-After`` (a Status body under the APIs)."""
    wait = int(settings.LOGIN_LOCKOUT_SECONDS)
    username = (credentials or {}).get("username") or ""
    log.warning("sign-in refused: too many failures (username %r, address %s)", username, client_address(request))
    message = f"Too many failed sign-ins: try again in {wait} seconds."
    response: HttpResponse
    if _is_api(request):
        response = JsonResponse(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": "TooManyRequests",
                "code": 429,
            },
            status=429,
        )
    else:
        response = HttpResponse(
            f"<!doctype html><title>Too many failed sign-ins</title><p>{message}</p>",
            status=429,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(wait)
    return response


def _keys(address: str | None, user_id: int | None) -> list[str]:
    keys = [f"auth-failures:address:{address}"]
    if user_id is not None:
        keys.append(f"auth-failures:user:{user_id}")
    return keys


def retry_after(address: str | None, user_id: int | None = None) -> int | None:
    """Return the seconds until tokens from ``address`` (or for ``user_id``) are accepted again, or None (one
    round trip to the cache for both counters)."""
    now = time.time()
    entries = cache.get_many(_keys(address, user_id))
    waits = [
        max(1, math.ceil(entry[1] - now))
        for entry in entries.values()
        if entry and entry[0] >= settings.API_AUTH_FAILURE_LIMIT and entry[1] > now
    ]
    return max(waits) if waits else None


def record_token_failure(address: str | None, user_id: int | None, reason: str) -> None:
    """Count one failed bearer token for the address (and the user, when the token names one); log it."""
    now, window = time.time(), int(settings.API_AUTH_FAILURE_WINDOW)
    for key in _keys(address, user_id):
        entry = cache.get(key)
        if not entry or entry[1] <= now:
            entry = (0, now + window)
        entry = (entry[0] + 1, entry[1])
        cache.set(key, entry, timeout=max(1, math.ceil(entry[1] - now)))
        if entry[0] == settings.API_AUTH_FAILURE_LIMIT:
            log.warning("bearer tokens throttled for %s until the window ends (%s)", key.split(":", 1)[1], reason)
    log.info("bearer token refused from %s: %s", address, reason)
