"""REST API views under /api/v1/: parse, authorize, call one service or query, render. No writes here."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, list_body
from volcanoweb.api.listing import apply_filters, apply_ordering, clean_text, paginate
from volcanoweb.api.resources import NAMESPACED, Resource
from volcanoweb.apply import apply_documents
from volcanoweb.audit.models import AuditEntry
from volcanoweb.core.errors import BadRequest, Cause, Forbidden, NotFound, not_found
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Command, Event, HyperNode, Job, PriorityClass
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.parse import parse_documents
from volcanoweb.queues import services as queues
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling import services as scheduling
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.access import resolve_namespace, visible_queue_filter
from volcanoweb.tenancy.models import ApiToken, Namespace, TokenScope
from volcanoweb.workflows import services as workflows

MANIFEST_BODY = {"application/json": OpenApiTypes.OBJECT, "application/yaml": OpenApiTypes.STR}
ERRORS: dict[int | str, Any] = {
    400: OpenApiTypes.OBJECT,
    401: OpenApiTypes.OBJECT,
    403: OpenApiTypes.OBJECT,
    404: OpenApiTypes.OBJECT,
}
LIST_PARAMS = [
    OpenApiParameter("limit", int, description="page size (default 100, max 500)"),
    OpenApiParameter("continue", str, description="token from metadata.continue of the previous page"),
    OpenApiParameter("labelSelector", str, description="e.g. app=x,tier!=db,env in (a,b)"),
    OpenApiParameter("q", str, description="text search in names"),
    OpenApiParameter("ordering", str, description="comma-separated fields, - prefix to reverse"),
]
FILTER_PARAMS = [
    OpenApiParameter("queue", str),
    OpenApiParameter("phase", str),
]


def _list(request: Request, queryset: Any, resource: Resource, default_order: list[str]) -> dict[str, Any]:
    queryset = apply_filters(queryset, request.query_params, resource.filters, resource.text_fields)
    queryset = apply_ordering(queryset, request.query_params.get("ordering"), resource.ordering, default_order)
    items, meta = paginate(queryset, request.query_params)
    return list_body(resource.info.kind, [resource.render(obj) for obj in items], meta, resource.info.api_version)


def _check_url_identity(doc: dict[str, Any], namespace: str | None, name: str | None) -> None:
    given = doc.get("metadata")
    meta: dict[str, Any] = given if isinstance(given, dict) else {}
    if namespace and meta.get("namespace") not in (None, "", namespace):
        raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
    if name and meta.get("name") not in (None, "", name):
        raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
    if name and not meta.get("name"):
        doc["metadata"] = {**meta, "name": name}


def _names_namespace(doc: dict[str, Any]) -> bool:
    meta = doc.get("metadata")
    return isinstance(meta, dict) and isinstance(meta.get("namespace"), str) and bool(meta["namespace"])


class ApplyView(ApiView):
    """``POST /api/v1/apply``: multi-document YAML or JSON, all or nothing; ``?dryRun=true`` validates only."""

    @extend_schema(
        request=MANIFEST_BODY,
        parameters=[
            OpenApiParameter("dryRun", str, enum=["true", "false", "All"]),
            OpenApiParameter("namespace", str, description="namespace for objects that name none"),
        ],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        dry_run = request.query_params.get("dryRun", "").lower() in ("true", "all", "1")
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        access = self.access(request)
        documents = self.documents(request)
        if not namespace and not all(_names_namespace(doc) for doc in documents):
            namespace = access.default_namespace()  # a query: only when some document needs it
        outcomes = apply_documents(access, documents, default_namespace=namespace or None, dry_run=dry_run)
        items = [{**o.summary(), "object": o.object} for o in outcomes]
        return Response({"apiVersion": "v1", "kind": "ApplyResult", "dryRun": dry_run, "items": items})


class NamespacedCollectionView(ApiView):
    """``/api/v1/namespaces/{ns}/<resource>``: list and create."""

    resource_name = "jobs"

    @extend_schema(parameters=[*LIST_PARAMS, *FILTER_PARAMS], responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        resolve_namespace(self.access(request), namespace, "list", resource.info)
        queryset = resource.model.objects.filter(namespace=namespace)
        return Response(_list(request, queryset, resource, ["name"]))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        doc = self.single_document(request, resource.info.kind)
        _check_url_identity(doc, namespace, None)
        outcome = resource.apply(self.access(request), doc, namespace, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class NamespacedObjectView(ApiView):
    """``/api/v1/namespaces/{ns}/<resource>/{name}``: get, replace, delete."""

    resource_name = "jobs"

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        resolve_namespace(self.access(request), namespace, "get", resource.info, name)
        obj = resource.model.objects.filter(namespace=namespace, name=name).first()
        if obj is None:
            raise not_found(resource.info.qualified_resource, name, resource.info.kind, resource.info.group)
        return Response(resource.render(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        doc = self.single_document(request, resource.info.kind)
        _check_url_identity(doc, namespace, name)
        outcome = resource.apply(self.access(request), doc, namespace, mode="update")
        return Response(outcome.object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        resource = NAMESPACED[self.resource_name]
        access = self.access(request)

        def current() -> Any:
            obj = resource.model.objects.select_for_update().filter(namespace=namespace, name=name).first()
            return obj if obj is not None and access.can_read(obj.tenant_id) else None

        outcome = self.delete_checked(
            request, current, lambda: resource.delete(access, namespace, name), resource.info.qualified_resource, name
        )
        return Response(outcome.object)


class AllNamespacesView(ApiView):
    """``/api/v1/<resource>``: list across the caller's namespaces (``?namespace=`` filters)."""

    resource_name = "jobs"

    @extend_schema(
        parameters=[*LIST_PARAMS, *FILTER_PARAMS, OpenApiParameter("namespace", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        resource = NAMESPACED[self.resource_name]
        queryset = self.access(request).scope(resource.model.objects.all())
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        if namespace:
            queryset = queryset.filter(namespace=namespace)
        return Response(_list(request, queryset, resource, ["namespace", "name"]))


class JobCommandsView(ApiView):
    """``/api/v1/namespaces/{ns}/jobs/{name}/commands``: list and issue commands (abort, resume, restart,
    terminate, complete). Body ``{"action": "AbortJob", "reason": "...", "message": "..."}``."""

    body_fields = frozenset({"action", "reason", "message", "apiVersion", "kind"})

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        resolve_namespace(self.access(request), namespace, "get", parse.JOB, name)
        job = Job.objects.filter(namespace=namespace, name=name).first()
        if job is None:
            raise not_found(parse.JOB.qualified_resource, name, "Job", parse.JOB.group)
        items = [jobs.command_manifest(c) for c in Command.objects.filter(job=job).order_by("-created_at", "-id")[:100]]
        return Response(list_body("Command", items, {}, "bus.volcano.sh/v1alpha1"))

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT},
        parameters=[OpenApiParameter("action", str, description="alternative to the body's action")],
        responses={201: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request: Request, namespace: str, name: str) -> Response:
        body = self.mapping_body(request)
        action = body.get("action") or request.query_params.get("action")
        reason, message = body.get("reason") or "", body.get("message") or ""
        if not isinstance(reason, str) or not isinstance(message, str):
            raise BadRequest("reason and message must be strings")
        command = jobs.issue_job_command(self.access(request), namespace, name, action, reason, message)
        return Response(jobs.command_manifest(command), status=status.HTTP_201_CREATED)


class CronJobSuspendView(ApiView):
    """``POST /api/v1/namespaces/{ns}/cronjobs/{name}/suspend``: set ``spec.suspend: true``; returns the CronJob."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str, name: str) -> Response:
        return Response(workflows.suspend_cronjob(self.access(request), namespace, name).object)


class CronJobResumeView(ApiView):
    """``POST /api/v1/namespaces/{ns}/cronjobs/{name}/resume``: set ``spec.suspend: false``; returns the CronJob."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str, name: str) -> Response:
        return Response(workflows.resume_cronjob(self.access(request), namespace, name).object)


class CronJobRunView(ApiView):
    """``POST /api/v1/namespaces/{ns}/cronjobs/{name}/run``: create one job from the jobTemplate now
    (``kubectl create job --from=cronjob/NAME``; concurrencyPolicy and suspend are not applied); returns the Job."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, namespace: str, name: str) -> Response:
        return Response(render.job(workflows.run_cronjob_now(self.access(request), namespace, name)))


QUEUE_ORDER = {"name": "name", "created": "created_at", "weight": "weight", "priority": "priority", "state": "state"}


class QueueCollectionView(ApiView):
    """``/api/v1/queues``: list the queues the caller can see; create (platform or tenant admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS, OpenApiParameter("state", str), OpenApiParameter("parent", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        access = self.access(request)
        queryset: QuerySet[Any] = Queue.objects.filter(visible_queue_filter(access)).distinct().select_related("parent")
        queryset = apply_filters(
            queryset, request.query_params, {"state": "state", "parent": "parent__name"}, ("name",)
        )
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), QUEUE_ORDER, ["name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(list_body("Queue", [render.queue(q) for q in items], meta, parse.QUEUE.api_version))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "Queue")
        outcome = queues.apply_queue(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class QueueObjectView(ApiView):
    """``/api/v1/queues/{name}``: get, replace, delete."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.get_visible_queue(self.access(request), name)))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        access = self.access(request)
        queues.get_visible_queue(access, name)
        doc = self.single_document(request, "Queue")
        _check_url_identity(doc, None, name)
        return Response(queues.apply_queue(access, doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        access = self.access(request)

        def current() -> Any:
            try:
                return queues.get_visible_queue(access, name, for_update=True)
            except NotFound:
                return None

        outcome = self.delete_checked(
            request, current, lambda: queues.delete_queue(access, name), parse.QUEUE.qualified_resource, name
        )
        return Response(outcome.object)


class QueueOpenView(ApiView):
    """``POST /api/v1/queues/{name}/open``."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.open_queue(self.access(request), name)))


class QueueCloseView(ApiView):
    """``POST /api/v1/queues/{name}/close``: Closed, or Closing while PodGroups still use it."""

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request, name: str) -> Response:
        return Response(render.queue(queues.close_queue(self.access(request), name)))


class PriorityClassCollectionView(ApiView):
    """``/api/v1/priorityclasses``: everyone lists; platform admins create."""

    @extend_schema(parameters=LIST_PARAMS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        queryset = apply_filters(PriorityClass.objects.all(), request.query_params, {}, ("name",))
        order = {"name": "name", "value": "value", "created": "created_at"}
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), order, ["-value", "name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(
            list_body("PriorityClass", [render.priorityclass(p) for p in items], meta, parse.PRIORITYCLASS.api_version)
        )

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "PriorityClass")
        outcome = jobs.apply_priorityclass(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class PriorityClassObjectView(ApiView):
    """``/api/v1/priorityclasses/{name}``."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        obj = PriorityClass.objects.filter(name=name).first()
        if obj is None:
            raise not_found(parse.PRIORITYCLASS.qualified_resource, name, "PriorityClass", parse.PRIORITYCLASS.group)
        return Response(render.priorityclass(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        doc = self.single_document(request, "PriorityClass")
        _check_url_identity(doc, None, name)
        return Response(jobs.apply_priorityclass(self.access(request), doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        access = self.access(request)
        outcome = self.delete_checked(
            request,
            lambda: PriorityClass.objects.select_for_update().filter(name=name).first(),
            lambda: jobs.delete_priorityclass(access, name),
            parse.PRIORITYCLASS.qualified_resource,
            name,
        )
        return Response(outcome.object)


class HyperNodeCollectionView(ApiView):
    """``/api/v1/hypernodes``: everyone lists (lowest tier first); platform admins create."""

    @extend_schema(parameters=LIST_PARAMS, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        queryset = apply_filters(HyperNode.objects.all(), request.query_params, {}, ("name",))
        order = {"name": "name", "tier": "tier", "created": "created_at"}
        queryset = apply_ordering(queryset, request.query_params.get("ordering"), order, ["tier", "name"])
        items, meta = paginate(queryset, request.query_params)
        return Response(list_body("HyperNode", [render.hypernode(h) for h in items], meta, parse.HYPERNODE.api_version))

    @extend_schema(request=MANIFEST_BODY, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        doc = self.single_document(request, "HyperNode")
        outcome = jobs.apply_hypernode(self.access(request), doc, mode="create")
        return Response(outcome.object, status=status.HTTP_201_CREATED)


class HyperNodeObjectView(ApiView):
    """``/api/v1/hypernodes/{name}``."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, name: str) -> Response:
        obj = HyperNode.objects.filter(name=name).first()
        if obj is None:
            raise not_found(parse.HYPERNODE.qualified_resource, name, "HyperNode", parse.HYPERNODE.group)
        return Response(render.hypernode(obj))

    @extend_schema(request=MANIFEST_BODY, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def put(self, request: Request, name: str) -> Response:
        doc = self.single_document(request, "HyperNode")
        _check_url_identity(doc, None, name)
        return Response(jobs.apply_hypernode(self.access(request), doc, mode="update").object)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        return Response(jobs.delete_hypernode(self.access(request), name).object)


def event_manifest(event: Event) -> dict[str, Any]:
    """Return an Event in the ``v1`` Event shape."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{event.involved_name}.{event.pk:x}", "namespace": event.namespace},
        "involvedObject": {
            "kind": event.involved_kind,
            "namespace": event.involved_namespace,
            "name": event.involved_name,
            "uid": str(event.involved_uid or ""),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "count": event.count,
        "firstTimestamp": render.timestamp(event.first_timestamp),
        "lastTimestamp": render.timestamp(event.last_timestamp),
        "source": {"component": event.source},
    }


EVENT_FILTERS = {"involvedKind": "involved_kind", "involvedName": "involved_name", "type": "type", "reason": "reason"}
EVENT_PARAMS = [OpenApiParameter(name, str) for name in EVENT_FILTERS]


def _event_list(request: Request, queryset: Any) -> dict[str, Any]:
    queryset = apply_filters(queryset, request.query_params, EVENT_FILTERS, ("message", "involved_name"))
    queryset = queryset.order_by("-last_timestamp", "-pk")
    items, meta = paginate(queryset, request.query_params)
    return list_body("Event", [event_manifest(e) for e in items], meta)


class EventListView(ApiView):
    """``/api/v1/events``: events of the caller's tenants (cluster-wide ones for platform admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS[:2], *EVENT_PARAMS, OpenApiParameter("namespace", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queryset = self.access(request).scope(Event.objects.all())
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        if namespace:
            queryset = queryset.filter(namespace=namespace)
        return Response(_event_list(request, queryset))


class NamespacedEventListView(ApiView):
    """``/api/v1/namespaces/{ns}/events``."""

    @extend_schema(parameters=[*LIST_PARAMS[:2], *EVENT_PARAMS], responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request, namespace: str) -> Response:
        info = parse.KindInfo("v1", "Event", "events", True)
        resolve_namespace(self.access(request), namespace, "list", info)
        return Response(_event_list(request, Event.objects.filter(namespace=namespace)))


def audit_manifest(entry: AuditEntry) -> dict[str, Any]:
    """Return one audit entry."""
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": entry.actor_name,
        "tenant": entry.tenant.name if entry.tenant else None,
        "action": entry.action,
        "kind": entry.kind,
        "objectKey": entry.object_key,
        "source": entry.source,
        "message": entry.message,
        "before": entry.before,
        "after": entry.after,
    }


AUDIT_FILTERS = {"kind": "kind", "action": "action", "actor": "actor_name", "tenant": "tenant__name"}


class AuditListView(ApiView):
    """``/api/v1/audit``: the audit log of the caller's tenants (everything for platform admins)."""

    @extend_schema(
        parameters=[*LIST_PARAMS[:2], *(OpenApiParameter(n, str) for n in AUDIT_FILTERS), OpenApiParameter("q", str)],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        queryset = self.access(request).scope(AuditEntry.objects.select_related("tenant"))
        queryset = apply_filters(queryset, request.query_params, AUDIT_FILTERS, ("object_key",)).order_by("-at", "-pk")
        items, meta = paginate(queryset, request.query_params)
        return Response(
            {
                "apiVersion": "v1",
                "kind": "AuditEntryList",
                "metadata": meta,
                "items": [audit_manifest(e) for e in items],
            }
        )


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


class WhoAmIView(ApiView):
    """``/api/v1/whoami``: the caller, platform-admin flag, tenants with roles and namespaces."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        access = self.access(request)
        namespaces: dict[int, list[str]] = {}
        for ns in Namespace.objects.filter(tenant_id__in=access.readable_tenant_ids()).order_by("name"):
            namespaces.setdefault(ns.tenant_id or 0, []).append(ns.name)
        tenants = [
            {"name": access.tenant_names[tid], "role": role, "namespaces": namespaces.get(tid, [])}
            for tid, role in sorted(access.roles.items(), key=lambda item: access.tenant_names[item[0]])
        ]
        return Response(
            {
                "kind": "WhoAmI",
                "username": access.username,
                "platformAdmin": access.platform_admin,
                "tenants": tenants,
                "defaultNamespace": access.default_namespace(),
                "authentication": "token" if isinstance(request.auth, ApiToken) else "session",
            }
        )


class NamespaceListView(ApiView):
    """``/api/v1/namespaces``: the namespaces the caller may use, with their tenant."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request: Request) -> Response:
        access = self.access(request)
        queryset = Namespace.objects.select_related("tenant").order_by("name")
        if not access.platform_admin:
            queryset = queryset.filter(tenant_id__in=access.readable_tenant_ids())
        items = [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns.name, "labels": ns.labels, "annotations": ns.annotations},
                "tenant": ns.tenant.name if ns.tenant else None,
            }
            for ns in queryset
        ]
        return Response(list_body("Namespace", items, {}))


def minting_token(token: ApiToken | None) -> ApiToken | None:
    """Only a session, or a token with the admin scope, mints tokens; return the parent of the new token."""
    if token is not None and token.scope != TokenScope.ADMIN:
        raise Forbidden(
            f"the token {token.prefix}… (scope {token.scope}) cannot mint tokens: "
            "use a session or an admin-scoped token",
            kind="ApiToken",
        )
    return token


def token_manifest(token: ApiToken) -> dict[str, Any]:
    """Return a token's public fields (never the secret)."""
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "createdAt": token.created_at.isoformat(),
        "lastUsedAt": token.last_used_at.isoformat() if token.last_used_at else None,
        "expiresAt": token.expires_at.isoformat() if token.expires_at else None,
        "revoked": token.revoked_at is not None,
        "scope": token.scope,
        "parent": token.parent_id,
    }


class TokenCollectionView(ApiView):
    """``/api/v1/tokens``: the caller's API tokens; POST ``{"name": ...}`` creates one (secret shown once)."""

    body_fields = frozenset({"name", "scope", "expiresInDays"})

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        user = request.user
        assert user.is_authenticated  # the view's IsAuthenticated permission answered anonymous callers with 401
        items = [token_manifest(t) for t in ApiToken.objects.filter(user=user).order_by("-created_at")[:100]]
        return Response({"kind": "ApiTokenList", "items": items})

    @extend_schema(request={"application/json": OpenApiTypes.OBJECT}, responses={201: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request: Request) -> Response:
        body = self.mapping_body(request)
        name = body.get("name") or "api"
        if not isinstance(name, str) or "\x00" in name:
            raise BadRequest("name must be a string")
        scope = body.get("scope")
        if scope is not None and scope not in ("read", "submit", "admin"):
            raise BadRequest(
                "scope must be read, submit or admin",
                causes=[Cause("scope", f"Unsupported value: {scope!r}", "FieldValueNotSupported")],
            )
        days = body.get("expiresInDays")
        if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 1):
            raise BadRequest(
                "expiresInDays must be a positive integer", causes=[Cause("expiresInDays", "Invalid value")]
            )
        expires = timezone.now() + timedelta(days=days) if days is not None else None
        token, raw = tenancy.create_token(
            request.user, name, scope=scope, expires_at=expires, parent=minting_token(self.token(request))
        )
        return Response({**token_manifest(token), "token": raw}, status=status.HTTP_201_CREATED)


class TokenObjectView(ApiView):
    """``DELETE /api/v1/tokens/{id}``: revoke one of the caller's tokens."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def delete(self, request: Request, token_id: int) -> Response:
        return Response(token_manifest(tenancy.revoke_token(request.user, token_id)))


class NotFoundView(ApiView):
    """Any other path under /api/v1/ (and the Kubernetes API's /apis/, /api/, /openapi/): a Status 404 (401 first
    for anonymous callers)."""

    schema = None

    def _missing(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"the server could not find the requested resource ({request.path})")

    get = post = put = patch = delete = _missing
