"""DRF authentication with per-user API tokens: ``Authorization: Bearer <token>``."""

from __future__ import annotations

from typing import Any, NoReturn

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from volcanoweb.tenancy import services, throttling
from volcanoweb.tenancy.models import ApiToken, hash_token

#: Only update ``last_used_at`` when it is older than this, to avoid a write per request.
_TOUCH_INTERVAL_SECONDS = 60


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate ``Authorization: Bearer <token>`` against the stored token hashes.

    Failures are counted per client address (and per user, for a revoked or expired token of a known user):
    past ``API_AUTH_FAILURE_LIMIT`` in the window every token from that address, even a good one, is a 429
    with ``Retry-After`` (``tenancy.throttling``)."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        address = throttling.client_address(request)
        try:
            raw = header[1].decode() if len(header) == 2 else None
        except UnicodeError:
            raw = None
        if raw is None:
            self._refuse(address, None, "malformed header" if len(header) != 2 else "undecodable token")
        token = _token(hash_token(raw))
        if token is None or not token.is_usable() or not token.user.is_active:
            user_id = token.user_id if token is not None else None
            self._refuse(address, user_id, "unknown token" if token is None else "unusable token")
        # One look at both failure counters (the address's and the user's): past the limit, a good token is
        # refused too.
        wait = throttling.retry_after(address, token.user_id)
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail="Too many failed bearer tokens from this address or user.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > _TOUCH_INTERVAL_SECONDS:
            services.touch_token(token, now)
        return token.user, token

    @staticmethod
    def _refuse(address: str | None, user_id: int | None, reason: str) -> NoReturn:
        """Count the failure and refuse (429 instead when the address or user is throttled already)."""
        wait = throttling.retry_after(address, user_id)
        if wait is not None:
            raise exceptions.Throttled(wait=wait, detail="Too many failed bearer tokens from this address or user.")
        throttling.record_token_failure(address, user_id, reason)
        raise exceptions.AuthenticationFailed("Invalid or expired bearer token.")

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


def _token(digest: str) -> ApiToken | None:
    """The token with this hash, with its user and parent, or None.

    ``get`` rather than ``first``: the hash is unique, and ``first`` ordered by the model's ``-created_at``, whose
    compilation was a third of the lookup's CPU (every API request makes it)."""
    try:
        return ApiToken.objects.select_related("user", "parent").get(token_hash=digest)
    except ApiToken.DoesNotExist:
        return None
