"""``POST /api/v1/simulate``: what-if for a manifest against the live cluster state. Changes nothing.

The body is a manifest like ``/api/v1/apply``'s (Jobs, PodGroups, Pods, Queues, PriorityClasses; plus
``v1`` Nodes as hypothetical extra capacity). The documents are first validated exactly as an apply
would (a dry run: admission rules and the caller's permissions; rolled back). Then the live snapshot
(``volcanoweb.scheduling.snapshots.build_snapshot``) is extended with the manifest's objects — a Job
becomes its PodGroup (the runtime's gang fields) and one pod per replica — and one scheduling cycle of
the core (``scheduler.run_cycle``) runs with the active scheduler configuration. The answer tells, for
each job of the manifest: admitted (enqueued) or not, where each pod would go, and why not
(``CycleResult`` reasons); and which running pods the cycle would evict.

Wire it with ``path("api/v1/simulate", SimulateView.as_view(), name="simulate")``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler import Eviction, Snapshot, Task
from scheduler import Job as CoreJob
from scheduler.decode import GROUP_ANNOTATION, ManifestError
from volcanoweb.api.base import ApiView
from volcanoweb.api.listing import clean_text
from volcanoweb.api.simcycle import SimulationFailed, SimulationTimeout, merge, run_isolated
from volcanoweb.apply import apply_documents
from volcanoweb.core.errors import BadRequest, Cause, ServiceUnavailable, TooLarge, TooManyRequests
from volcanoweb.jobs.models import Job
from volcanoweb.runtime.controllers.podgroup import job_podgroup_fields
from volcanoweb.scheduling.cycles import active_config
from volcanoweb.scheduling.snapshots import build_snapshot
from volcanoweb.tenancy.access import Access
from volcanoweb.tenancy.models import Namespace

NODE_KEY = ("v1", "Node")
SIMULATED = ("Job", "PodGroup", "Pod", "Queue", "PriorityClass", "HyperNode")
TASK_SPEC = "volcano.sh/task-spec"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
ADMITTED_PHASES = ("Inqueue", "Running")
__all__ = ["SIMULATED", "SimulateView", "job_documents", "merge", "simulate"]
_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None


def _simulation_slots() -> threading.BoundedSemaphore:
    """At most ``SIMULATE_CONCURRENCY`` simulations at a time in this process."""
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.SIMULATE_CONCURRENCY)
        return _slots


def _replicas(job: Mapping[str, Any]) -> int:
    total = 0
    for task in (job.get("spec") or {}).get("tasks") or []:
        replicas = task.get("replicas") if isinstance(task, Mapping) else 0
        total += replicas if isinstance(replicas, int) and replicas > 0 else 0
    return total


def check_cost(outcomes: list[Any], nodes: list[dict[str, Any]]) -> None:
    """Refuse (413) a simulation of more pods or nodes than ``SIMULATE_MAX_PODS`` / ``SIMULATE_MAX_NODES``,
    counted from the validated objects before any pod is built."""
    pods = sum(_replicas(o.object) if o.kind == "Job" else 1 if o.kind == "Pod" else 0 for o in outcomes)
    if pods > settings.SIMULATE_MAX_PODS:
        raise TooLarge(
            f"the manifest would simulate {pods} pods, more than SIMULATE_MAX_PODS ({settings.SIMULATE_MAX_PODS})",
            causes=[Cause("spec.tasks[].replicas", f"{pods} pods > SIMULATE_MAX_PODS={settings.SIMULATE_MAX_PODS}")],
        )
    if len(nodes) > settings.SIMULATE_MAX_NODES:
        raise TooLarge(
            f"the manifest adds {len(nodes)} nodes, more than SIMULATE_MAX_NODES ({settings.SIMULATE_MAX_NODES})",
            causes=[Cause("kind", f"{len(nodes)} Nodes > SIMULATE_MAX_NODES={settings.SIMULATE_MAX_NODES}")],
        )


def _meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def job_documents(job: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Return the PodGroup and pod documents the job controller would create for a (validated) Job."""
    meta, spec = _meta(job), job.get("spec") or {}
    row = Job(
        name=meta.get("name", ""),
        namespace=meta.get("namespace", ""),
        spec=spec,
        queue_name=spec.get("queue") or "default",
        priority_class_name=spec.get("priorityClassName") or "",
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
    )
    fields = job_podgroup_fields(row)
    group = f"{row.name}-{meta.get('uid') or 'simulated'}"
    podgroup = {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": group,
            "namespace": row.namespace,
            "labels": fields["labels"],
            "annotations": fields["annotations"],
        },
        "spec": fields["spec"],
    }
    pods = []
    for task in spec.get("tasks") or []:
        template = task.get("template") or {}
        template_meta = template.get("metadata") or {}
        for index in range(int(task.get("replicas") or 0)):
            pod_spec = dict(template.get("spec") or {})
            pod_spec.setdefault("schedulerName", spec.get("schedulerName") or "volcano")
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{row.name}-{task['name']}-{index}",
                        "namespace": row.namespace,
                        "labels": dict(template_meta.get("labels") or {}),
                        "annotations": {
                            **(template_meta.get("annotations") or {}),
                            GROUP_ANNOTATION: group,
                            TASK_SPEC: task["name"],
                        },
                    },
                    "spec": pod_spec,
                }
            )
    return podgroup, pods


def _visible_namespaces(access: Access) -> set[str] | None:
    """Return the namespaces whose pod names the caller may see (None: all of them)."""
    if access.platform_admin:
        return None
    return set(Namespace.objects.filter(tenant_id__in=access.readable_tenant_ids()).values_list("name", flat=True))


def simulate(access: Access, outcomes: list[Any], nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One scheduling cycle of the core on the live snapshot plus validated (dry-run) apply outcomes.

    Used by ``POST /api/v1/simulate`` and by the dashboard's Submit dry run, so both give the verdict the
    scheduler itself would reach now (enqueue and allocate with the active configuration). Bounded: the
    pods and nodes (:func:`check_cost`), ``SIMULATE_CONCURRENCY`` at a time per process (else 429), and the
    cycle runs in a child process killed after ``SIMULATE_TIMEOUT`` seconds (413; ``volcanoweb.api.simcycle``).
    """
    nodes = list(nodes or [])
    check_cost(outcomes, nodes)
    slots = _simulation_slots()
    if not slots.acquire(timeout=settings.SIMULATE_QUEUE_WAIT):
        raise TooManyRequests(
            f"{settings.SIMULATE_CONCURRENCY} simulations are running (SIMULATE_CONCURRENCY); retry shortly",
            retry_after=max(1, int(settings.SIMULATE_QUEUE_WAIT)),
        )
    try:
        return _simulate(access, outcomes, nodes)
    finally:
        slots.release()


def _simulate(access: Access, outcomes: list[Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    objects: list[dict[str, Any]] = list(nodes)
    origins: dict[str, tuple[str, str]] = {}  # podgroup key -> (kind, name) of the manifest object
    queue_names: set[str] = set()
    for outcome in outcomes:
        obj = outcome.object
        if outcome.kind == "Job":
            podgroup, pods = job_documents(obj)
            objects += [podgroup, *pods]
            origins[f"{outcome.namespace}/{podgroup['metadata']['name']}"] = ("Job", outcome.name)
        else:
            objects.append(obj)
            if outcome.kind == "PodGroup":
                origins[f"{outcome.namespace}/{outcome.name}"] = ("PodGroup", outcome.name)
            elif outcome.kind == "Queue":
                queue_names.add(outcome.name)
    info = build_snapshot()
    config, version = active_config()
    timeout = settings.SIMULATE_TIMEOUT
    try:
        extra, result = run_isolated(
            info.snapshot, objects, queue_names, int(time.time() * 1_000_000), config, timeout=timeout
        )
    except ManifestError as exc:
        raise BadRequest(str(exc), causes=[Cause(exc.field or "", exc.detail)]) from None
    except SimulationTimeout:
        raise TooLarge(
            f"the simulation did not finish within SIMULATE_TIMEOUT ({timeout:g} s); simulate fewer pods or nodes"
        ) from None
    except SimulationFailed as exc:
        raise ServiceUnavailable(f"the simulation failed: {exc}") from None
    for job in extra.jobs:
        if job.key not in origins:  # a bare pod's own PodGroup
            pod = next((t for t in extra.tasks if t.job == job.key), None)
            origins[job.key] = ("Pod", pod.name if pod else job.name)
    return _report(access, extra, origins, result, version)


class SimulateView(ApiView):
    """``POST /api/v1/simulate``: would this manifest be admitted, where would its pods go, and why not."""

    @extend_schema(
        request={"application/yaml": OpenApiTypes.STR, "application/json": OpenApiTypes.OBJECT},
        parameters=[OpenApiParameter("namespace", str, description="namespace for objects that name none")],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 401: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        access = self.access(request)
        namespace = clean_text(request.query_params.get("namespace"), "namespace", 63)
        documents = self.documents(request)
        nodes = [d for d in documents if (d.get("apiVersion"), d.get("kind")) == NODE_KEY]
        managed = [d for d in documents if (d.get("apiVersion"), d.get("kind")) != NODE_KEY]
        for index, doc in enumerate(managed):
            if doc.get("kind") not in SIMULATED:
                raise BadRequest(
                    f"document {index + 1}: simulate handles {', '.join(SIMULATED)} and v1 Node, "
                    f"not {doc.get('kind')!r}",
                    causes=[Cause("kind", f"Unsupported value: {doc.get('kind')!r}", "FieldValueNotSupported")],
                )
        outcomes = apply_documents(
            access, managed, default_namespace=namespace or access.default_namespace(), dry_run=True
        )
        return Response(simulate(access, outcomes, nodes))


def _report(
    access: Access, extra: Snapshot, origins: dict[str, tuple[str, str]], result: Any, version: int
) -> dict[str, Any]:
    jobs = []
    for job in sorted(extra.jobs, key=lambda j: j.key):
        kind, name = origins.get(job.key, ("PodGroup", job.name))
        tasks = sorted((t for t in extra.tasks if t.job == job.key), key=lambda t: t.key)
        jobs.append({"kind": kind, "name": name, **_job_report(job, tasks, result)})
    visible = _visible_namespaces(access)
    evictions = [_eviction_report(eviction, visible) for eviction in result.evictions]
    return {
        "apiVersion": "v1",
        "kind": "SimulationResult",
        "schedulerConfigVersion": version,
        "jobs": jobs,
        "evictions": evictions,
    }


def _placements(tasks: list[Task], result: Any) -> list[dict[str, Any]]:
    """Where the cycle put each of a job's pods: bound, or pipelined onto a node being freed."""
    placements = []
    for task in tasks:
        if task.key in result.binds:
            placements.append({"pod": task.name, "node": result.binds[task.key], "how": "bind"})
        elif task.key in result.pipelined:
            placements.append({"pod": task.name, "node": result.pipelined[task.key], "how": "pipelined"})
    return placements


def _job_report(job: CoreJob, tasks: list[Task], result: Any) -> dict[str, Any]:
    """One job's entry after its kind and name: its PodGroup, phase, placements and why not."""
    placements = _placements(tasks, result)
    phase = str(result.podgroups.get(job.key) or job.phase)
    bound = sum(1 for p in placements if p["how"] == "bind")
    reason = result.unschedulable.get(job.key)
    return {
        "namespace": job.namespace,
        "podgroup": job.name,
        "queue": job.queue,
        "minMember": job.min_member,
        "pods": len(tasks),
        "placed": bound,
        "phase": phase,
        "admitted": phase in ADMITTED_PHASES,
        "scheduled": bool(tasks) and bound >= max(job.min_member, 1),
        "placements": placements,
        "reason": None
        if reason is None
        else {
            "kind": str(reason.kind),
            "message": reason.message,
            "plugin": reason.plugin,
            "fitErrors": dict(reason.fit_errors),
            "numbers": dict(reason.numbers),
        },
    }


def _eviction_report(eviction: Eviction, visible: set[str] | None) -> dict[str, Any]:
    """One eviction, naming only the pods of the caller's namespaces (``visible``; None: every namespace)."""
    namespace = eviction.task.split("/", 1)[0]
    shown = visible is None or namespace in visible
    return {
        "pod": eviction.task if shown else "(a pod of another tenant)",
        "node": eviction.node,
        "action": eviction.action,
        "reason": eviction.reason,
        "preemptor": eviction.preemptor
        if visible is None or eviction.preemptor.split("/", 1)[0] in visible
        else "(a pod of another tenant)",
    }
