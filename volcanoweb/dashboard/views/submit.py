"""Submit: a YAML editor validated by the API's dry run, with the cookbook scenarios as templates."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from volcanoweb.api.simulate import SIMULATED, simulate
from volcanoweb.apply import apply_documents
from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard import cluster, diagnosis, forecast
from volcanoweb.dashboard.reasons import Reason
from volcanoweb.dashboard.scope import Scope, get_scope
from volcanoweb.dashboard.views.common import error_info, page
from volcanoweb.demo.services import COOKBOOK_DIR as COOKBOOK
from volcanoweb.jobs.models import Job
from volcanoweb.jobs.services import FINISHED_JOB_PHASES
from volcanoweb.manifests import parse
from volcanoweb.manifests.admission import tenant_may_use
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import visible_queue_filter
from volcanoweb.tenancy.models import Namespace

#: The product's own templates beside the cookbook's files (a JobFlow with its JobTemplates).
EXTRA_TEMPLATES = COOKBOOK.parent / "templates"


def _template_paths() -> list[Any]:
    return sorted([*COOKBOOK.glob("*.yaml"), *EXTRA_TEMPLATES.glob("*.yaml")], key=lambda p: p.name)


def cookbook() -> list[dict[str, str]]:
    """Return the Submit page's templates (the cookbook's YAML files and the product's own) with a title from their
    file name."""
    out = []
    for path in _template_paths():
        title = path.stem.split("-", 1)[1].replace("-", " ") if "-" in path.stem else path.stem
        out.append({"file": path.name, "title": f"{path.stem.split('-', 1)[0]} · {title}"})
    return out


def _default_namespace(request: HttpRequest, text: str = "") -> str:
    """Return the namespace the editor starts with; with a template's ``text``, one its queues accept."""
    scope = get_scope(request)
    current = ""
    if scope.selected is not None:
        current = (
            Namespace.objects.filter(tenant_id=scope.selected).order_by("name").values_list("name", flat=True).first()
            or ""
        )
    if not current:
        fallback = scope.access.default_namespace()
        if Namespace.objects.filter(name=fallback).exists():
            current = fallback
        else:
            visible = scope.filter(Namespace.objects.all()).order_by("name").values_list("name", flat=True).first()
            current = visible or fallback
    queues = template_queues(text) if text else set()
    return namespace_for_queues(scope, queues, current) if queues else current


def template_queues(text: str) -> set[str]:
    """Return the queues named by the documents of ``text`` that take the editor's default namespace."""
    try:
        documents = parse.parse_documents(text)
    except ApiError:
        return set()
    names = set()
    for doc in documents:
        if (doc.get("metadata") or {}).get("namespace") or doc.get("kind") == "Queue":
            continue
        spec = _mapping(doc.get("spec"))
        template = _mapping(spec.get("jobTemplate"))  # CronJob
        inner = _mapping(template.get("spec"))
        queue = spec.get("queue") or inner.get("queue")
        if isinstance(queue, str) and queue:
            names.add(queue)
    return names


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def namespace_for_queues(scope: Scope, queues: set[str], current: str) -> str:
    """Return a namespace the caller may write whose tenant may use every one of ``queues``.

    Preference: a namespace of a queue's owning tenant, then ``current``, then by name; only the
    namespaces and queues the caller sees are considered. ``current`` when none fits (the dry run
    then says why).
    """
    found = list(
        Queue.objects.filter(visible_queue_filter(scope.access), name__in=queues)
        .distinct()
        .prefetch_related("allowed_tenants")
    )
    if not found:
        return current
    owners = {q.tenant_id for q in found if q.tenant_id is not None}
    fitting = [
        ns
        for ns in scope.filter(Namespace.objects.select_related("tenant")).order_by("name")
        if scope.can_write(ns.tenant_id) and all(tenant_may_use(q, ns.tenant) for q in found)
    ]
    if not fitting:
        return current
    best = min(fitting, key=lambda ns: (ns.tenant_id not in owners, ns.name != current, ns.name))
    return best.name


@login_required
def submit(request: HttpRequest) -> HttpResponse:
    """Render the editor, optionally preloaded with a cookbook template (``?template=01-...yaml``)."""
    chosen = request.GET.get("template", "")
    text = _template_text(chosen) if chosen else ""
    return page(
        request,
        "dashboard/submit.html",
        {
            "nav": "submit",
            "templates": cookbook(),
            "text": text,
            "chosen": chosen,
            "namespace": _default_namespace(request, text),
        },
    )


def _template_text(name: str) -> str:
    for path in _template_paths():
        if path.name == name:
            return str(path.read_text())
    raise Http404("no such template")


@login_required
def template_text(request: HttpRequest, name: str) -> HttpResponse:
    """Return one cookbook template as plain text (the editor loads it).

    The ``X-Default-Namespace`` header names a namespace the template's queues accept; the editor
    puts it in its namespace field, so the namespace follows the template.
    """
    text = _template_text(name)
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["X-Default-Namespace"] = _default_namespace(request, text)
    return response


def _apply(request: HttpRequest, dry_run: bool) -> tuple[list[Any], dict[str, Any] | None]:
    scope = get_scope(request)
    text = request.POST.get("manifest", "")
    if not text.strip():
        return [], {"message": "The editor is empty: paste a manifest or pick a template.", "reason": "Empty"}
    try:
        documents = parse.parse_documents(text, field_validation="Strict")  # as the API: unknown fields refused
        if not documents:
            return [], {"message": "No documents found.", "reason": "Empty"}
        outcomes = apply_documents(
            scope.access,
            documents,
            default_namespace=request.POST.get("namespace") or _default_namespace(request, text),
            dry_run=dry_run,
        )
    except ApiError as exc:
        return [], explain_queue_access(error_info(exc))
    return outcomes, None


_QUEUE_NOT_FOUND = re.compile(r'queues\.scheduling\.volcano\.sh "([a-z0-9.-]+)" not found')


def _offered_queues() -> set[str]:
    """Queues named by the cookbook templates this page offers every user (so they know those exist)."""
    names: set[str] = set()
    for path in _template_paths():
        names.update(re.findall(r"^\s*queue:\s*([a-z0-9.-]+)\s*$", path.read_text(), flags=re.MULTILINE))
    return names


def explain_queue_access(error: dict[str, Any]) -> dict[str, Any]:
    """Say "you cannot use queue X (owned by tenant Y)" instead of "not found" where the user knows X exists.

    Admission reports a queue the caller cannot see as not found, so the API never confirms that a
    name exists. On this page the user may know it: the queue is named by one of the templates the
    page itself offers. For those queues only, the message says who owns it.
    """
    offered = _offered_queues()
    causes = []
    changed = False
    for cause in error.get("causes") or []:
        match = _QUEUE_NOT_FOUND.search(str(cause.get("message") or ""))
        queue = Queue.objects.select_related("tenant").filter(name=match.group(1)).first() if match else None
        if match and queue is not None and queue.name in offered:
            owner = f" (owned by tenant {queue.tenant.name})" if queue.tenant else ""
            message = (
                f"you cannot use queue {queue.name}{owner}: it is not open to your tenant. "
                "Pick a queue of your own, or ask its tenant's admins to allow yours."
            )
            cause = {**cause, "message": message}
            changed = True
        causes.append(cause)
    if not changed:
        return error
    return {**error, "message": "A queue in this manifest is not open to you.", "causes": causes}


def _nothing_runs(outcome: Any) -> tuple[str, str, list[Reason], Job] | None:
    """When applying a Job manifest would run nothing, say so and what to do: the job exists with this spec
    (``unchanged``), or it exists and has finished (an update of a finished job does not run it again). None
    otherwise (a new job, or a change to one that is still active)."""
    existing = Job.objects.filter(namespace=outcome.namespace, name=outcome.name).first()
    if existing is None or outcome.action == "created":
        return None
    key = f"{outcome.namespace}/{outcome.name}"
    finished = existing.phase in FINISHED_JOB_PHASES
    if outcome.action == "unchanged" and not finished:
        detail = (
            f"{key} is {existing.phase}; applying leaves it as it is. To run another job from this manifest, change "
            "metadata.name here; once it has finished, Run again on its page makes a new job from its spec."
        )
        return (
            "wait",
            f"Nothing would change: {key} already exists with this spec",
            [Reason("apply", "Unchanged", detail, "info")],
            existing,
        )
    if not finished:
        return None
    what = "already exists with this spec" if outcome.action == "unchanged" else "exists: applying would update it"
    detail = (
        f"{key} {what}, and it has finished ({existing.phase}); a finished job does not run again. To run it "
        f"again, use Run again on its page (a new job from the same spec), or change metadata.name here."
    )
    return (
        "never",
        f"Nothing would run: {key} has finished ({existing.phase})",
        [Reason("apply", "A finished job is not run again by an apply", detail, "block")],
        existing,
    )


@login_required
@require_POST
def validate(request: HttpRequest) -> HttpResponse:
    """Dry-run the editor's manifest and say what would happen."""
    outcomes, error = _apply(request, dry_run=True)
    scope = get_scope(request)
    verdicts: dict[str, dict[str, Any]] = {}
    if error is None and any(o.kind == "Job" for o in outcomes):
        try:
            report = simulate(scope.access, [o for o in outcomes if o.kind in SIMULATED])
            verdicts = {f"{j['namespace']}/{j['name']}": j for j in report["jobs"] if j["kind"] == "Job"}
        except ApiError as exc:
            error = error_info(exc)
    results = []
    inventory = cluster.inventory() if any(o.kind == "Job" for o in outcomes) else []
    for outcome in outcomes:
        item: dict[str, Any] = {"outcome": outcome}
        same = _nothing_runs(outcome) if outcome.kind == "Job" else None
        if same is not None:
            item["level"], item["headline"], item["reasons"], item["existing"] = same
        elif outcome.kind == "Job":
            verdict = verdicts.get(f"{outcome.namespace}/{outcome.name}")
            item["level"], item["headline"], item["reasons"] = _job_verdict(outcome, verdict, inventory, scope)
        results.append(item)
    return render(request, "dashboard/_dry_run.html", {"results": results, "error": error})


def _job_verdict(
    outcome: Any, verdict: dict[str, Any] | None, inventory: list[Any], scope: Scope
) -> tuple[str, str, list[Reason]]:
    """What would happen to one Job of the manifest: the hand-made forecast, the simulated cycle's verdict, what
    stands in the way when its enqueue refused the gang (as the job's page would say it), and the node shapes."""
    spec = outcome.object.get("spec") or {}
    level, headline, reasons = forecast.forecast_job(spec)
    if verdict is not None:
        level, headline, line = forecast.simulated_verdict(verdict, level)
        reasons = [line, *[r for r in reasons if r.severity != "warn" or level != "ok"]]
        existing = Job.objects.filter(namespace=outcome.namespace, name=outcome.name).first()
        refusal = forecast.enqueue_refusal(spec, verdict, existing, scope.tenant_ids)
        if refusal is not None:
            level, headline, first = refusal
            reasons = [*first, *reasons]
    shapes = diagnosis.never_fitting_tasks(Job(spec=spec), inventory)
    if shapes and level != "never":  # admitted by a configuration without the enqueue gate, never placed
        name, detail = shapes[0]
        level, headline = "never", f"Can never run: each pod of task {name} {detail}"
        reasons.insert(0, Reason("cluster", "No single node can ever run its pods", "", "block"))
    return level, headline, reasons


@login_required
@require_POST
def apply(request: HttpRequest) -> HttpResponse:
    """Apply the manifest for real; go to the first job's page."""
    outcomes, error = _apply(request, dry_run=False)
    if error is not None:
        return render(request, "dashboard/_dry_run.html", {"results": [], "error": error}, status=422)
    job = next((o for o in outcomes if o.kind == "Job"), None)
    response = render(request, "dashboard/_applied.html", {"outcomes": outcomes})
    if job is not None:
        response["HX-Redirect"] = reverse("dashboard:job", args=[job.namespace, job.name])
    return response
