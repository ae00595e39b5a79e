"""``/api/v1/scheduler-config``: the scheduler's configuration, its stored versions and their activation."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView
from volcanoweb.api.listing import clean_text, paginate
from volcanoweb.api.schema import ERRORS, LIST_PARAMS
from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.manifests.parse import parse_documents
from volcanoweb.scheduling import services as scheduling
from volcanoweb.scheduling.models import SchedulerProfile


class SchedulerConfigView(ApiView):
    """``/api/v1/scheduler-config``: GET the active configuration; PUT a new version (YAML body, platform admins)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(scheduling.manifest(scheduling.active_profile()))

    @extend_schema(
        request={"application/yaml": OpenApiTypes.STR, "application/json": OpenApiTypes.OBJECT},
        parameters=[OpenApiParameter("comment", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def put(self, request: Request) -> Response:
        text = self._config_text(request)
        comment = clean_text(request.query_params.get("comment"), "comment", 200) or ""
        outcome = scheduling.save_config(self.access(request), text, comment=comment)
        return Response({**outcome.object, "result": outcome.action})

    def _config_text(self, request: Request) -> str:
        raw = self.body(request)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest(
                "the request body is not valid UTF-8", causes=[Cause("", "not valid UTF-8", "FieldValueInvalid")]
            ) from None
        if not text.strip():
            raise BadRequest(
                "the body must be a scheduler configuration (YAML)",
                causes=[Cause("", "Required value", "FieldValueRequired")],
            )
        if request.content_type.startswith("application/json"):
            data = self.mapping_body(request)
            if isinstance(data.get("yaml"), str):
                text = str(data["yaml"])
        # The manifests' limits (depth, aliases, NUL, duplicate keys) before the core's parser sees it.
        parse_documents(text, field_validation=self.field_validation(request), warnings=self.field_warnings)
        return text


class SchedulerConfigVersionsView(ApiView):
    """``/api/v1/scheduler-config/versions``: every stored version, newest first."""

    @extend_schema(parameters=LIST_PARAMS[:2], responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        items, meta = paginate(
            SchedulerProfile.objects.select_related("created_by").order_by("-version"), request.query_params
        )
        return Response(
            {
                "apiVersion": "v1",
                "kind": "SchedulerConfigList",
                "metadata": meta,
                "items": [scheduling.manifest(p) for p in items],
            }
        )


class SchedulerConfigActivateView(ApiView):
    """``POST /api/v1/scheduler-config/versions/{version}/activate`` (platform admins)."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, version: int) -> Response:
        return Response(scheduling.manifest(scheduling.activate_version(self.access(request), version)))
