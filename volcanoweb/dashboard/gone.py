"""When an object an open page shows is deleted: who deleted it and when, from the audit log.

A live partial of a deleted job (its status, events, actions, timeline), CronJob (summary, history, actions) or
JobFlow (phase, steps) gets a small fragment that says so and an ``objectGone`` htmx trigger; the page's script
shows the notice once and stops refreshing (``static/js/app.js``); the page itself is the product's 404 saying the
same. Only callers who could see the object's tenant learn who deleted it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from volcanoweb.audit.models import AuditEntry
from volcanoweb.dashboard import errors
from volcanoweb.dashboard.scope import Scope

#: How a notice names each kind: a job in words, the workflow kinds as Kubernetes spells them.
NOUNS = {"Job": "job", "CronJob": "CronJob", "JobFlow": "JobFlow"}


@dataclass(frozen=True)
class Gone:
    """A deleted object: what it was, who deleted it (empty when unknown) and when."""

    kind: str
    key: str
    by: str
    at: datetime
    why: str = ""

    @property
    def text(self) -> str:
        """``This job was deleted by bob at 06:44:12 UTC (3 minutes ago).``"""
        noun = NOUNS.get(self.kind, self.kind)
        ago = max(int((timezone.now() - self.at).total_seconds()), 0)
        when = f"{self.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC ({_ago(ago)})"
        why = f": {self.why}" if self.why else ""
        return f"This {noun} ({self.key}) was deleted by {self.by} at {when}{why}."


def _ago(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def deleted(scope: Scope, kind: str, key: str) -> Gone | None:
    """The newest delete of ``kind`` ``key`` the caller may know about (its tenant is theirs), or None."""
    entry = AuditEntry.objects.filter(kind=kind, object_key=key, action="delete").order_by("-at", "-id").first()
    if entry is None or (scope.tenant_ids is not None and entry.tenant_id not in scope.tenant_ids):
        return None
    if entry.actor_id is not None or entry.source in ("", "api"):
        by = entry.actor_name or "system"
    else:
        by = f"the {entry.source}"  # the controller's TTL clean-up, say
    return Gone(kind, key, by, entry.at, entry.message)


def gone_fragment(request: HttpRequest, gone: Gone) -> HttpResponse:
    """The partial a live region of a deleted object gets (200, so htmx swaps it without an error), with the
    ``objectGone`` trigger carrying the page-wide notice."""
    response = render(request, "dashboard/_gone.html", {"gone": gone})
    response["HX-Trigger"] = json.dumps({"objectGone": {"message": gone.text}})
    return response


def deleted_answer(request: HttpRequest, scope: Scope, kind: str, key: str) -> HttpResponse:
    """The answer for a page, or a live partial, of a ``kind`` ``key`` that no longer exists: the gone fragment for
    a partial, the 404 page saying who deleted it and when for the page. Raises Http404 (the product's plain 404 or
    error fragment) when the caller knows of no delete of it: never seen, or not theirs to see."""
    found = deleted(scope, kind, key)
    if found is None:
        raise Http404(f"{kind} {key} not found")
    if request.GET.get("fragment") or request.headers.get("HX-Request"):
        return gone_fragment(request, found)
    return errors.not_found_page(request, found.text)
