"""The actions on a job and a CronJob that are no write of the object: a job's commands (abort, resume,
restart, ...), a CronJob's suspend, resume and run-now."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.api.base import ApiView, list_body
from volcanoweb.api.schema import ERRORS
from volcanoweb.core.errors import BadRequest, not_found
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Command, Job
from volcanoweb.manifests import parse, render
from volcanoweb.tenancy.access import resolve_namespace
from volcanoweb.workflows import services as workflows


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
