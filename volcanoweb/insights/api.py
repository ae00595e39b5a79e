"""REST API of insights (routes in ``volcanoweb/insights/urls.py``, under /api/v1/): thin adapters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, YamlRenderer
from volcanoweb.core.errors import not_found
from volcanoweb.insights import effects, services, suggestions
from volcanoweb.insights.services import history_csv, history_query

ERRORS: dict[int | str, Any] = {400: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT, 403: OpenApiTypes.OBJECT}
ERRORS_404: dict[int | str, Any] = {**ERRORS, 404: OpenApiTypes.OBJECT}


class CsvRenderer(BaseRenderer):
    """``text/csv`` (or ``?format=csv``): the view hands over the CSV text, error bodies become JSON lines."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        if isinstance(data, str):
            return data.encode()
        if isinstance(data, dict) and data.get("kind") == "QueueHistory":
            return history_csv(data).encode()
        rendered: bytes = JSONRenderer().render(data)
        return rendered


class QueueHistoryView(ApiView):
    """``GET /api/v1/queues/{name}/history?from=&to=&step=``: allocated vs deserved vs guarantee over time."""

    renderer_classes = [JSONRenderer, YamlRenderer, CsvRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from", str, description="ISO 8601 time, 'now', or a duration ago (1h, 7d); default to-1h"
            ),
            OpenApiParameter("to", str, description="ISO 8601 time, 'now' (default) or a duration ago"),
            OpenApiParameter("step", str, description="seconds or 30s/5m/1h per point (default: every cycle ≤1h)"),
            OpenApiParameter("format", str, description="json (default), yaml or csv"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS_404},
    )
    def get(self, request: Request, name: str) -> Response:
        params = request.query_params
        query = history_query(params.get("from"), params.get("to"), params.get("step"))
        return Response(services.queue_history(self.access(request), name, query))


class QueueTimeToStartView(ApiView):
    """``GET /api/v1/queues/{name}/time-to-start?days=7``: percentiles of submission-to-bind."""

    @extend_schema(
        parameters=[OpenApiParameter("days", float, description="look-back window in days (default 7)")],
        responses={200: OpenApiTypes.OBJECT, **ERRORS_404},
    )
    def get(self, request: Request, name: str) -> Response:
        raw = request.query_params.get("days", "7")
        try:
            days = float(raw)
        except ValueError:
            days = -1.0
        if not 0 < days <= 366:
            raise services._bad("days", f"invalid value {raw!r}: a number of days in (0, 366]")
        return Response(services.time_to_start(self.access(request), name, days))


class JobTimelineView(ApiView):
    """``GET /api/v1/namespaces/{namespace}/jobs/{name}/timeline``: the job's waits as intervals."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS_404})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        access = self.access(request)
        job = services.get_readable_job(access, namespace, name)
        return Response(services.job_timeline(access, job))


class JobSuggestionsView(ApiView):
    """``GET /api/v1/namespaces/{namespace}/jobs/{name}/suggestions``: verified changes that would start it."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS_404})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        access = self.access(request)
        job = services.get_readable_job(access, namespace, name)
        return Response(suggestions.suggest(access, job))


class AuditEffectsView(ApiView):
    """``GET /api/v1/audit/{id}/effects``: what a queue or scheduler-configuration change did (simulated)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS_404})
    def get(self, request: Request, audit_id: int) -> Response:
        body = effects.effects_for(self.access(request), audit_id)
        if body is None:
            raise not_found("audit", str(audit_id), "AuditEntry")
        return Response({"apiVersion": "v1", "kind": "ChangeEffects", **body})


class CycleListView(ApiView):
    """``GET /api/v1/cycles``: the cycles whose input is kept (platform admins); ``?job=``, ``?queue=`` and
    ``?decision=`` (bind, evict, unschedulable) keep those that decided about that job, queue or kind."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        access = self.access(request)
        items = services.list_cycles(access, where=services.cycle_filter(request.query_params))
        return Response({"apiVersion": "v1", "kind": "CycleList", "metadata": {}, "items": items})


class CycleSnapshotView(ApiView):
    """``GET /api/v1/cycles/{n}/snapshot``: one cycle's input as a file for ``python -m scheduler simulate``."""

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT, **ERRORS_404})
    def get(self, request: Request, cycle: int) -> HttpResponse:
        text = services.cycle_file(self.access(request), cycle)
        response = HttpResponse(text.encode(), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="cycle-{cycle}.json"'
        return response
