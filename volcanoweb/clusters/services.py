"""Writes for the cluster side: mirror backend events into the database, and PodGroups for plain pods
(fault injection on the cluster is :mod:`volcanoweb.clusters.faults`).

:func:`sync_from_backend` is the bridge between the cluster backend and the database: it polls the
backend's events, mirrors pod phase / node / exit code / timestamps into ``jobs.Pod`` rows and
nodes into :class:`~volcanoweb.clusters.models.Node`, gives plain ``schedulerName: volcano`` pods a
PodGroup (docs/controllers.md, "Plain pods and their PodGroups"), creates API-submitted plain pods in
the backend. The job controller learns which jobs' pods changed from the change log (``runtime.informer``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scheduler.quantity import format_quantity
from volcanoweb.clusters.backend import get_backend
from volcanoweb.clusters.backends.base import (
    GROUP_NAME_ANNOTATION,
    VOLCANO_SCHEDULER,
    BackendError,
    BackendEvent,
    ClusterBackend,
    Container,
    NodeInfo,
    PodInfo,
    PodSpec,
)
from volcanoweb.clusters.backends.base import Conflict as BackendConflict
from volcanoweb.clusters.backends.base import NotFound as BackendNotFound
from volcanoweb.clusters.backends.simrecords import integer_resources
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.clusters.models import Node, NodeKind
from volcanoweb.core.stageprof import stage
from volcanoweb.jobs.models import Pod, PodGroup, PodGroupPhase, PodPhase
from volcanoweb.manifests.admission import tenant_may_use_queue
from volcanoweb.tenancy.models import Namespace

log = logging.getLogger(__name__)

QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
GPU_RESOURCE = "nvidia.com/gpu"
FINISHED = (PodPhase.SUCCEEDED, PodPhase.FAILED)
#: The Pod columns :func:`_mirror_pods` reads or writes.
MIRROR_FIELDS = (
    "id",
    "namespace",
    "name",
    "tenant_id",
    "job_id",
    "phase",
    "node_name",
    "exit_code",
    "started_at",
    "finished_at",
    "deletion_timestamp",
    "status",
)


@dataclass
class SyncResult:
    """What one :func:`sync_from_backend` call did."""

    events: int = 0
    pods_changed: int = 0
    pods_created: int = 0
    pods_deleted: int = 0
    nodes_changed: int = 0
    podgroups_created: int = 0
    job_ids: set[int] = field(default_factory=set)


# --------------------------------------------------------------------------- nodes


def node_fields(info: NodeInfo) -> dict[str, Any]:
    """Return the :class:`Node` column values for an observed node."""
    allocatable = integer_resources(info.allocatable, pod_slot=False)
    allocatable.setdefault("pods", 110)
    return {
        "labels": dict(info.labels),
        "taints": [t.to_dict() for t in info.taints],
        "unschedulable": info.unschedulable,
        "ready": info.ready,
        "conditions": [{"type": "Ready", "status": "True" if info.ready else "False"}],
        "allocatable": allocatable,
        "capacity": dict(allocatable),
        "kind": NodeKind.GPU if allocatable.get(GPU_RESOURCE, 0) > 0 else NodeKind.CPU,
        "backend_version": info.resource_version,
    }


def _mirror_node(event_type: str, info: NodeInfo) -> bool:
    if event_type == "DELETED":
        deleted, _ = Node.objects.filter(name=info.name).delete()
        return bool(deleted)
    fields = node_fields(info)
    node = Node.objects.filter(name=info.name).first()
    if node is None:
        Node.objects.create(name=info.name, **fields)
    else:
        if all(getattr(node, k) == v for k, v in fields.items() if k != "backend_version"):
            return False
        for key, value in fields.items():
            setattr(node, key, value)
        node.updated_at = timezone.now()
        node.save(update_fields=[*fields, "updated_at"])
    return True


#: The averaging periods node usage is written under: the rescheduling plugin's default ``metricsPeriod`` and
#: Volcano's ``NODE_METRICS_PERIOD`` (the usage plugin's); one reading serves both (metrics-server reports a
#: short window, the simulated cluster its current use).
USAGE_PERIODS = ("5m", "10m")


#: An unchanged reading is written again (only its time moves) once the stored one is this old.
USAGE_REFRESH = timedelta(seconds=60)


def _percent(used: int, total: int) -> float:
    return round(100.0 * used / total, 1) if total > 0 else 0.0


def record_node_usage(backend: ClusterBackend | None = None) -> int:
    """Write the backend's node metrics as each Node row's ``usage`` (percent of its allocatable cpu and memory)
    and ``usage_time``; return how many rows changed. Nodes without metrics keep what they had; an unchanged
    reading is written again only once the stored one is ``USAGE_REFRESH`` old (rows, and the scheduler's
    snapshot nodes, do not churn every reading)."""
    backend = backend or get_backend()
    metrics = {m.name: m for m in backend.node_metrics()}
    if not metrics:
        return 0
    changed = 0
    with transaction.atomic():
        for node in Node.objects.filter(name__in=list(metrics)).select_for_update(no_key=True).order_by("name"):
            m = metrics[node.name]
            reading = {
                "cpu": _percent(m.cpu, int(node.allocatable.get("cpu", 0))),
                "memory": _percent(m.memory, int(node.allocatable.get("memory", 0))),
            }
            usage = dict.fromkeys(USAGE_PERIODS, reading)
            when = datetime.fromtimestamp(m.time, UTC)
            if node.usage == usage and node.usage_time is not None and when - node.usage_time < USAGE_REFRESH:
                continue  # unchanged and still fresh (the usage plugin ignores readings over 5 minutes old)
            node.usage, node.usage_time = usage, when
            node.save(update_fields=["usage", "usage_time"])
            changed += 1
    return changed


@transaction.atomic
def resync_nodes(backend: ClusterBackend | None = None) -> int:
    """Make the Node mirror equal to the backend's node list; return how many rows changed."""
    backend = backend or get_backend()
    infos = {info.name: info for info in backend.list_nodes()}
    changed = 0
    for name in Node.objects.exclude(name__in=list(infos)).values_list("name", flat=True):
        changed += _mirror_node("DELETED", NodeInfo(name=name))
    for info in infos.values():
        changed += _mirror_node("MODIFIED", info)
    if changed:
        _discover_topology()
    return changed


def _discover_topology() -> None:
    """Keep the HyperNodes found from node labels current (Volcano's label discovery)."""
    from volcanoweb.jobs import services as jobs  # jobs' services read the cluster's nodes

    jobs.discover_hypernodes()


# --------------------------------------------------------------------------- pods


def _timestamp(value: float | None) -> datetime | None:
    """Backend times: epoch seconds from Kubernetes; the sim's are simulated seconds (not dates)."""
    if value is None or value < 1e9:
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def _observed_status(pod: Pod, info: PodInfo) -> dict[str, Any]:
    status = dict(pod.status or {})
    status.update(
        {
            "phase": info.phase,
            "reason": info.reason,
            "message": info.message,
            "backendUid": info.uid,
            "backendVersion": info.resource_version,
        }
    )
    if info.exit_code is not None:
        status["exitCode"] = info.exit_code
    if info.restart_count or "restartCount" in status:
        status["restartCount"] = info.restart_count
    if info.deleting:
        status["deleting"] = True
    return status


def _apply_pod_info(pod: Pod, info: PodInfo, now: datetime) -> list[str]:
    """Copy observed fields onto a row; return the changed field names."""
    changed: list[str] = []

    def put(name: str, value: Any) -> None:
        if getattr(pod, name) != value:
            setattr(pod, name, value)
            changed.append(name)

    put("phase", info.phase)
    if info.node_name:
        put("node_name", info.node_name)
    put("exit_code", info.exit_code)
    if info.phase in (PodPhase.RUNNING, *FINISHED) and pod.started_at is None:
        put("started_at", _timestamp(info.started_at) or now)
    if info.phase in FINISHED and pod.finished_at is None:
        put("finished_at", _timestamp(info.finished_at) or now)
    if info.deleting and pod.deletion_timestamp is None:
        put("deletion_timestamp", now)
    put("status", _observed_status(pod, info))
    return changed


def _controller_view(pod: Pod) -> tuple[Any, ...]:
    """What the job controller reads of a pod row (phase, exit code, deletion, restarts, gone)."""
    status = pod.status or {}
    return (
        pod.phase,
        pod.exit_code,
        pod.deletion_timestamp is not None,
        status.get("restartCount"),
        bool(status.get("deleted")),
    )


def _new_pod_row(info: PodInfo, tenants: Mapping[str, int | None]) -> Pod:
    """A mirror row for a pod created directly in the cluster (another operator's pod)."""
    spec: dict[str, Any] = {"schedulerName": info.scheduler_name, "containers": []}
    if info.priority_class_name:
        spec["priorityClassName"] = info.priority_class_name
    group = info.group_name or ""
    return Pod(
        namespace=info.namespace,
        name=info.name,
        tenant_id=tenants.get(info.namespace),
        labels=dict(info.labels),
        annotations=dict(info.annotations),
        group_name=group,
        scheduler_name=info.scheduler_name,
        priority_class_name=info.priority_class_name,
        requests=integer_resources(info.requests, pod_slot=False),
        spec=spec,
        phase=info.phase,
        node_name=info.node_name,
        exit_code=info.exit_code,
        owner_references=[info.owner.to_dict()] if info.owner else [],
        status={"phase": info.phase, "backendUid": info.uid, "origin": "cluster"},
    )


def _latest_pod_events(events: list[BackendEvent]) -> dict[tuple[str, str], BackendEvent]:
    """The last event of each pod in ``events`` (the earlier ones are superseded)."""
    latest: dict[tuple[str, str], BackendEvent] = {}
    for event in events:
        if event.kind == "pod":
            assert isinstance(event.object, PodInfo)
            latest[event.object.key] = event
    return latest


def _locked_rows(keys: Iterable[tuple[str, str]]) -> tuple[dict[tuple[str, str], Pod], Mapping[str, int | None]]:
    """The mirror rows of these pods, locked, and the tenant of each of their namespaces."""
    names_by_ns: dict[str, set[str]] = {}
    for ns, name in keys:
        names_by_ns.setdefault(ns, set()).add(name)
    rows: dict[tuple[str, str], Pod] = {}
    which = Q()
    for ns, names in names_by_ns.items():
        which |= Q(namespace=ns, name__in=names)
    # only what the mirror reads and writes: a pod's spec, labels and annotations are large JSON documents, and
    # decoding them for every event of a cycle's thousands of binds was most of the mirror's time. Locked in id
    # order, as the cycle locks the pods it binds: a bind committed between this read and the write below would
    # otherwise be overwritten with the status read before it (its scheduledBy lost).
    locked = Pod.objects.select_for_update(no_key=True, of=("self",)).filter(which).only(*MIRROR_FIELDS).order_by("pk")
    for row in locked:
        rows[(row.namespace, row.name)] = row
    tenants = dict(Namespace.objects.filter(name__in=list(names_by_ns)).values_list("name", "tenant_id"))
    return rows, tenants


def _mirror_new_pod(event_type: str, info: PodInfo, tenants: Mapping[str, int | None], result: SyncResult) -> None:
    """A pod without a mirror row: a row for one created directly in the cluster, unless it is gone or not ours."""
    if event_type == "DELETED":
        return
    if info.scheduler_name != VOLCANO_SCHEDULER and not info.node_name:
        return  # another scheduler's unbound pod: nothing to schedule or account
    Pod.objects.bulk_create([_new_pod_row(info, tenants)], ignore_conflicts=True)
    result.pods_created += 1


def _mark_deleted(pod: Pod, now: datetime) -> list[str]:
    """Mark a job pod's row deleted (it stays until the job controller has seen it); return the fields."""
    pod.status = {**pod.status, "deleted": True}
    if pod.deletion_timestamp is None:
        pod.deletion_timestamp = now
    return ["status", "deletion_timestamp"]


def _mirror_pods(events: list[BackendEvent], result: SyncResult) -> None:
    latest = _latest_pod_events(events)
    if not latest:
        return
    rows, tenants = _locked_rows(latest)
    now = timezone.now()
    updated: list[Pod] = []
    fields: set[str] = set()
    for key, event in sorted(latest.items()):
        info = event.object
        assert isinstance(info, PodInfo)
        pod = rows.get(key)
        if pod is None:
            _mirror_new_pod(event.type, info, tenants, result)
            continue
        if event.type == "DELETED" and pod.job_id is None:
            pod.delete()
            result.pods_deleted += 1
            continue
        observed = _controller_view(pod)
        changed = _apply_pod_info(pod, info, now)
        if event.type == "DELETED":
            changed += _mark_deleted(pod, now)
        if not changed:
            continue
        fields.update(changed)
        updated.append(pod)
        if pod.job_id is not None and _controller_view(pod) != observed:
            # the job controller derives its events from these only; a bind, or the cluster's own echo of a
            # pod the controller just created (uid, resourceVersion), needs no reconcile
            result.job_ids.add(pod.job_id)
    if updated:
        bulk_update_rows(Pod, updated, sorted(fields))
    result.pods_changed += len(updated)


def podgroup_name(pod: Pod) -> str:
    """The PodGroup the PodGroup controller gives a plain pod (docs/controllers.md, "Plain pods and their
    PodGroups")."""
    for ref in pod.owner_references or []:
        if ref.get("controller") and ref.get("uid"):
            return f"podgroup-{ref['uid']}"
    return f"podgroup-{pod.uid}"


def ensure_plain_pod_groups(backend: ClusterBackend | None = None) -> int:
    """Give every plain volcano pod without a group annotation its PodGroup (docs/controllers.md, "Plain
    pods and their PodGroups").

    minMember 1, minResources = the pod's request, queue from the pod annotation
    ``scheduling.volcano.sh/queue-name`` (else ``default``), phase Pending; the pod is annotated
    with ``scheduling.k8s.io/group-name`` (in the database and, if it exists there, in the backend).
    """
    plain = list(Pod.objects.filter(job__isnull=True, group_name="", scheduler_name=VOLCANO_SCHEDULER)[:1000])
    created = 0
    for pod in plain:
        name = podgroup_name(pod)
        group = PodGroup.objects.filter(namespace=pod.namespace, name=name).first()
        if group is None:
            queue = pod.annotations.get(QUEUE_NAME_ANNOTATION) or "default"
            if not tenant_may_use_queue(queue, pod.tenant_id):
                log.warning("pod %s names queue %s, which its tenant may not use: not grouped", pod.key, queue)
                continue
            min_resources = {k: format_quantity(k, v) for k, v in sorted(pod.requests.items()) if v}
            spec: dict[str, Any] = {"minMember": 1, "queue": queue}
            if min_resources:
                spec["minResources"] = min_resources
            if pod.priority_class_name:
                spec["priorityClassName"] = pod.priority_class_name
            owner = pod.owner_references or [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": str(pod.uid), "controller": True}
            ]
            group = PodGroup.objects.create(
                namespace=pod.namespace,
                name=name,
                tenant_id=pod.tenant_id,
                queue_name=queue,
                min_member=1,
                min_resources=min_resources or None,
                priority_class_name=pod.priority_class_name,
                phase=PodGroupPhase.PENDING,
                spec=spec,
                status={"phase": PodGroupPhase.PENDING.value},
                owner_references=owner,
            )
            created += 1
        pod.group_name = name
        pod.podgroup = group
        pod.annotations = {**pod.annotations, GROUP_NAME_ANNOTATION: name}
        pod.save(update_fields=["group_name", "podgroup", "annotations"])
        if backend is not None and (pod.status or {}).get("backendUid"):
            with contextlib.suppress(BackendNotFound):
                backend.patch_pod_annotations(pod.namespace, pod.name, {GROUP_NAME_ANNOTATION: name})
    # pods whose PodGroup was created after them
    for pod in Pod.objects.filter(podgroup__isnull=True).exclude(group_name="")[:1000]:
        group = PodGroup.objects.filter(namespace=pod.namespace, name=pod.group_name).first()
        if group is not None:
            pod.podgroup = group
            pod.save(update_fields=["podgroup"])
    return created


def pod_spec_from_row(pod: Pod) -> PodSpec:
    """Return the backend ``PodSpec`` for a pod row whose ``spec`` has the Kubernetes shape."""
    spec = pod.spec or {}

    def container(raw: dict[str, Any]) -> Container:
        resources = raw.get("resources") or {}
        env = {e["name"]: str(e.get("value", "")) for e in raw.get("env") or [] if isinstance(e, dict) and "name" in e}
        return Container(
            name=str(raw.get("name") or "main"),
            image=str(raw.get("image") or ""),
            command=list(raw.get("command") or []),
            args=list(raw.get("args") or []),
            env=env,
            requests={k: str(v) for k, v in (resources.get("requests") or {}).items()},
            limits={k: str(v) for k, v in (resources.get("limits") or {}).items()},
            ports=list(raw.get("ports") or []),
        )

    return PodSpec(
        namespace=pod.namespace,
        name=pod.name,
        containers=[container(c) for c in spec.get("containers") or [] if isinstance(c, dict)],
        init_containers=[container(c) for c in spec.get("initContainers") or [] if isinstance(c, dict)],
        labels=dict(pod.labels),
        annotations=dict(pod.annotations),
        scheduler_name=pod.scheduler_name,
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=list(spec.get("tolerations") or []),
        affinity=spec.get("affinity"),
        priority_class_name=pod.priority_class_name,
        restart_policy=str(spec.get("restartPolicy") or "Never"),
    )


#: Plain pods created in the cluster per call of :func:`create_plain_pods_in_backend`.
PLAIN_POD_BATCH = 2000


def create_plain_pods_in_backend(backend: ClusterBackend) -> int:
    """Create in the cluster the plain pods submitted through the API (rows not yet in the cluster).

    The rows already in the cluster (``status.backendUid``) are left out by the query, so more than
    :data:`PLAIN_POD_BATCH` pending plain pods never hide the rest from later calls."""
    candidates = (
        Pod.objects.filter(job__isnull=True, phase=PodPhase.PENDING, node_name="", deletion_timestamp__isnull=True)
        .exclude(status__has_key="backendUid")
        .order_by("id")
    )
    pods = [pod for pod in candidates[:PLAIN_POD_BATCH] if not (pod.status or {}).get("backendUid")]
    if not pods:
        return 0
    create_many = getattr(backend, "create_pods", None)
    results: dict[tuple[str, str], PodInfo | BackendError] = {}
    if create_many is not None:
        results = create_many([pod_spec_from_row(pod) for pod in pods])
    else:
        for pod in pods:
            try:
                results[(pod.namespace, pod.name)] = backend.create_pod(pod_spec_from_row(pod))
            except BackendError as exc:
                results[(pod.namespace, pod.name)] = exc
    done: list[Pod] = []
    for pod in pods:
        outcome = results.get((pod.namespace, pod.name))
        if isinstance(outcome, BackendConflict):
            try:
                outcome = backend.get_pod(pod.namespace, pod.name)
            except BackendError as exc:
                outcome = exc
        if not isinstance(outcome, PodInfo):
            log.warning("could not create pod %s in the cluster: %s", pod.key, outcome)
            continue
        pod.status = {**(pod.status or {}), "backendUid": outcome.uid, "phase": outcome.phase}
        done.append(pod)
    bulk_update_rows(Pod, done, ["status"])
    return len(done)


# --------------------------------------------------------------------------- the sync loop


@stage("backend mirror")
def sync_from_backend(backend: ClusterBackend | None = None, *, timeout: float = 0.0) -> SyncResult:
    """Poll the backend once and mirror what changed.

    Events are consumed and mirrored in one transaction (with the database-backed sim a crash
    loses nothing: the consumed events come back). Safe to call from several processes at once.
    """
    backend = backend or get_backend()
    result = SyncResult()
    _sync_once(backend, result, timeout)
    return result  # the job controller learns of the mirrored pods from the change log (runtime.informer)


#: Node labels Volcano's label-based HyperNode discovery reads (``jobs.services.DISCOVERY_TIERS``).
_DISCOVERY_KEYS = ("volcano.sh/hypernode", "volcano.sh/hypercluster")


def _sync_once(backend: ClusterBackend, result: SyncResult, timeout: float) -> None:
    with transaction.atomic():
        if not Node.objects.exists():
            result.nodes_changed += resync_nodes(backend)
        create_plain_pods_in_backend(backend)
        # before the poll: with the database-backed sim, polling holds the consumers' lock (and the locks of the
        # pods its tick changed) until this transaction ends
        result.podgroups_created = ensure_plain_pod_groups(backend)
        events = backend.poll_events(timeout)
        result.events = len(events)
        latest_nodes: dict[str, BackendEvent] = {}
        for event in events:
            if event.kind == "node":
                latest_nodes[event.object.name] = event
        topology_changed = False
        for event in latest_nodes.values():
            assert isinstance(event.object, NodeInfo)
            mirrored = _mirror_node(event.type, event.object)
            result.nodes_changed += mirrored
            labels = event.object.labels or {}
            if mirrored and (event.type == "DELETED" or any(k in labels for k in _DISCOVERY_KEYS)):
                topology_changed = True
        if topology_changed:
            _discover_topology()
        _mirror_pods(events, result)


def node_summary(nodes: Iterable[Node]) -> dict[str, int]:
    """Return counts of ready / not-ready / unschedulable nodes (for dashboards)."""
    counts = {"total": 0, "ready": 0, "notReady": 0, "unschedulable": 0}
    for node in nodes:
        counts["total"] += 1
        counts["ready" if node.ready else "notReady"] += 1
        counts["unschedulable"] += int(node.unschedulable)
    return counts
