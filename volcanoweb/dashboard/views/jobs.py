"""Jobs: the filtered table with bulk actions, and the job page with its "why pending" panel."""

from __future__ import annotations

from typing import Any

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard import diagnosis, gone, queries
from volcanoweb.dashboard.actions import ACTIONS, job_actions, result_message, unavailable_reason, waiting_command
from volcanoweb.dashboard.scope import get_scope
from volcanoweb.dashboard.views.common import HtmxHttpRequest, error_info, page
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Event, Job, JobPhase, Pod
from volcanoweb.manifests import render as manifest_render
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.models import Namespace

MAX_BULK = 200


def _filters(request: HttpRequest) -> dict[str, str]:
    return {key: request.GET.get(key, "").strip() for key in ("queue", "phase", "namespace", "q", "sort")}


@login_required
def job_list(request: HtmxHttpRequest) -> HttpResponse:
    """Render the jobs table: filtered, sorted and paginated on the server."""
    scope = get_scope(request)
    params = _filters(request)
    qs, sort = queries.filtered_jobs(scope, params)
    paginator = Paginator(
        qs.only("id", "namespace", "name", "queue_name", "phase", "min_available", "created_at", "status", "tenant_id"),
        queries.PAGE_SIZE,
    )
    page_obj = paginator.get_page(request.GET.get("page"))
    namespaces = scope.filter(Namespace.objects.all()).values_list("name", flat=True)
    queue_names = Queue.objects.filter(scope.queue_q()).values_list("name", flat=True).distinct().order_by("name")
    context = {
        "nav": "jobs",
        "page_obj": page_obj,
        "params": params,
        "sort": sort,
        "phases": [p.value for p in JobPhase],
        "namespaces": list(namespaces),
        "queue_names": list(queue_names),
        "query": request.GET.copy(),
    }
    if request.htmx and request.htmx.target == "jobs-table":
        return render(request, "dashboard/_jobs_table.html", {**context, "scope": scope})
    return page(request, "dashboard/jobs.html", context, {"table": "dashboard/_jobs_table.html"})


def _run_action(scope: Any, job: Job, action: str) -> Any:
    command = ACTIONS[action]
    if action == "rerun":
        return job_services.run_again(scope.access, job.namespace, job.name)
    if command is None:
        job_services.delete_job(scope.access, job.namespace, job.name)
    else:
        job_services.issue_job_command(
            scope.access, job.namespace, job.name, command, reason="dashboard", message=f"{action} from the dashboard"
        )


@login_required
@require_POST
def job_bulk(request: HttpRequest) -> HttpResponse:
    """Apply one action to the selected jobs; report per-job failures."""
    scope = get_scope(request)
    action = request.POST.get("action", "")
    ids = [int(x) for x in request.POST.getlist("ids") if x.isdigit()][:MAX_BULK]
    if action not in ACTIONS or action == "rerun" or not ids:
        return render(
            request,
            "dashboard/_bulk_result.html",
            {"done": 0, "errors": ["Choose an action and at least one job."]},
            status=400,
        )
    jobs = scope.filter(Job.objects.filter(pk__in=ids)).only(
        "id", "namespace", "name", "phase", "status", "max_retry", "tenant_id"
    )
    done, errors, lines = 0, [], []
    for job in jobs:
        refused = unavailable_reason(job, action)
        if refused:
            errors.append(f"{job.key}: {refused}")
            continue
        try:
            message = result_message(job, action)
            _run_action(scope, job, action)
            done += 1
            lines.append(message)
        except ApiError as exc:
            errors.append(f"{job.key}: {exc.message}")
    response = render(
        request,
        "dashboard/_bulk_result.html",
        {"done": done, "action": action, "errors": errors, "messages": lines},
    )
    response["HX-Trigger"] = "jobs-changed"
    return response


def _scoped_job(request: HttpRequest, namespace: str, name: str) -> Job:
    scope = get_scope(request)
    return get_object_or_404(
        scope.filter(Job.objects.select_related("podgroup", "created_by")), namespace=namespace, name=name
    )


def _events(job: Job) -> list[Event]:
    """The job's, its pods' and its PodGroup's events for the job's whole life, and no other job's.

    The controller deletes the PodGroup when the job finishes (or restarts) and pods go with their job, so
    the PodGroup is matched by the name the job controller gives it (``<job>-<uid>``), never by its row. The job's
    own events are those of its uid (a job made again under a deleted job's name is another job); its pods' are
    those named ``<job>-<task>-`` for one of its tasks (Run again's ``<job>-2`` has pods ``<job>-2-<task>-N``) since
    the job was created.
    """
    tasks = [str(t["name"]) for t in (job.spec or {}).get("tasks") or [] if isinstance(t, dict) and t.get("name")]
    pods_q = Q(pk__in=[])
    for task in tasks:
        pods_q |= Q(involved_name__startswith=f"{job.name}-{task}-")
    names_q = (
        Q(involved_kind="Job", involved_name=job.name, involved_uid=job.uid)
        | Q(involved_kind="Job", involved_name=job.name, involved_uid__isnull=True, last_timestamp__gte=job.created_at)
        | Q(pods_q, involved_kind="Pod", last_timestamp__gte=job.created_at)
        | Q(involved_kind="PodGroup", involved_name=f"{job.name}-{job.uid}")
    )
    pg = getattr(job, "podgroup", None) if _has_podgroup(job) else None
    if pg is not None and pg.name != f"{job.name}-{job.uid}":
        names_q |= Q(involved_kind="PodGroup", involved_name=pg.name)
    return list(Event.objects.filter(names_q, involved_namespace=job.namespace)[:100])


def _has_podgroup(job: Job) -> bool:
    try:
        return job.podgroup is not None
    except Job.podgroup.RelatedObjectDoesNotExist:
        return False


def _spec_yaml(job: Job) -> str:
    doc = manifest_render.job(job)
    doc.pop("status", None)
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _retries(job: Job) -> dict[str, Any]:
    status = job.status or {}
    commands = list(job.commands.order_by("-created_at")[:20])
    restarts = [c for c in commands if c.action in ("RestartJob", "AbortJob", "ResumeJob")]
    return {
        "retry_count": status.get("retryCount", 0),
        "max_retry": job.max_retry,
        "version": status.get("version", 0),
        "commands": restarts,
    }


@login_required
def job_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Render a job's page (or a live fragment of it). Once the job is deleted, a fragment says so (who, when)
    and the page is the product's 404 with the same words."""
    scope = get_scope(request)
    fragment = request.GET.get("fragment")
    try:
        job = _scoped_job(request, namespace, name)
    except Http404:
        return gone.deleted_answer(request, scope, "Job", f"{namespace}/{name}")
    context: dict[str, Any] = {"nav": "jobs", "job": job, "podgroup": job.podgroup if _has_podgroup(job) else None}
    context["can_write"] = scope.can_write(job.tenant_id)
    if fragment in (None, "actions"):
        context["actions"] = job_actions(job, waiting_command(job))
    if fragment in (None, "status"):
        context["tasks"] = list(job.tasks.all())
        context["pods"] = list(Pod.objects.filter(job=job).order_by("task_name", "index", "name")[:300])
        context["reasons"] = diagnosis.why_pending(job, scope.tenant_ids)
        context["retries"] = _retries(job)
    if fragment in (None, "events"):
        context["events"] = _events(job)
    if fragment is None:
        context["spec_yaml"] = _spec_yaml(job)
    return page(
        request,
        "dashboard/job_detail.html",
        context,
        {
            "status": "dashboard/_job_status.html",
            "events": "dashboard/_job_events.html",
            "actions": "dashboard/_job_actions.html",
        },
    )


@login_required
@require_POST
def job_action(request: HtmxHttpRequest, namespace: str, name: str) -> HttpResponse:
    """Suspend, resume, restart or delete a job through the job services."""
    scope = get_scope(request)
    job = _scoped_job(request, namespace, name)
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        return render(
            request, "dashboard/_error.html", {"error": {"message": f"Unknown action {action!r}."}}, status=400
        )
    refused = unavailable_reason(job, action)
    if refused:
        error = {"message": f"{action.capitalize()} is not available for {job.key}: {refused}"}
        return render(request, "dashboard/_error.html", {"error": error}, status=409)
    message = result_message(job, action)
    try:
        outcome = _run_action(scope, job, action)
    except ApiError as exc:
        return render(request, "dashboard/_error.html", {"error": error_info(exc)}, status=exc.code)
    if action == "rerun":
        messages.success(request, f"Started {outcome.namespace}/{outcome.name}, a new run of {job.key} (same spec).")
        target = reverse("dashboard:job", args=[outcome.namespace, outcome.name])
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        return redirect(target)
    if action == "delete":
        messages.success(request, message)
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = reverse("dashboard:jobs")
            return response
        return redirect("dashboard:jobs")
    response = render(request, "dashboard/_flash.html", {"message": message})
    response["HX-Trigger"] = "job-actions-changed"
    return response
