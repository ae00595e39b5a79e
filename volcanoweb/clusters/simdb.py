"""DatabaseSimCluster: the simulated cluster with its state in the database, shared by all processes.

Same behaviour as :class:`volcanoweb.clusters.backends.sim.SimCluster` (pool specs, durations and
exit codes from annotations, admission by the simulated kubelet, node failures, graceful
deletion), but the state lives in the ``Sim*`` tables of :mod:`volcanoweb.clusters.models` rather
than in one process's memory, so the web process, Celery workers and beat see ONE cluster.

Every mutation runs in a transaction that first locks the :class:`SimState` row; that row is the
cluster's lock, clock anchor and resourceVersion counter. The kubelet (:meth:`tick`) only touches
pods whose timers are due (indexed columns), so its cost follows the number of changes, not the
number of pods. Events are rows consumed (deleted) by :meth:`poll_events` in the caller's
transaction: when the caller mirrors them in the same transaction, a crash loses nothing.
See ``docs/adr/0006-simulated-cluster-state.md``.
"""

from __future__ import annotations

import contextlib
import heapq
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from scheduler.quantity import parse_duration, parse_resource
from volcanoweb.clusters.backends.base import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    BackendError,
    BackendEvent,
    ClusterBackend,
    Conflict,
    NodeInfo,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    restarts_in_place,
    simulated_pod_log,
)
from volcanoweb.clusters.backends.sim import (
    DEFAULT_MAX_PODS,
    UNREACHABLE_TAINT,
    Clock,
    ScaledClock,
    parse_pool_spec,
)
from volcanoweb.clusters.bulk import bulk_update_rows
from volcanoweb.clusters.models import SimEvent, SimNode, SimObject, SimPod, SimState

_UID_NAMESPACE = uuid.UUID("0b6c3b0e-8f0e-4f57-9d7c-2a0f3f7f6a11")
STATE_PK = 1
MAX_EVENTS_PER_POLL = 5000
_POD_FIELDS = [
    "spec",
    "usage",
    "phase",
    "node_name",
    "exit_code",
    "reason",
    "message",
    "deleting",
    "admitted",
    "resource_version",
    "started_at",
    "finished_at",
    "start_at",
    "finish_at",
    "remove_at",
    "restart_count",
]


def integer_resources(requests: dict[str, str], *, pod_slot: bool) -> dict[str, int]:
    """Return quantity strings as scheduler integers (cpu millicores, memory bytes, counts)."""
    out = {name: parse_resource(name, value) for name, value in requests.items()}
    if pod_slot:
        out["pods"] = 1
    return out


def node_capacity(info: NodeInfo) -> dict[str, int]:
    """Return a node's allocatable as integers (pods default 110)."""
    capacity = integer_resources(info.allocatable, pod_slot=False)
    capacity.setdefault("pods", DEFAULT_MAX_PODS)
    return capacity


def pod_info(pod: SimPod) -> PodInfo:
    """Return the observed state of a simulated pod."""
    spec = pod.spec
    owner = spec.get("owner")
    return PodInfo(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid,
        phase=pod.phase,
        node_name=pod.node_name,
        exit_code=pod.exit_code,
        reason=pod.reason,
        message=pod.message,
        annotations=dict(spec.get("annotations") or {}),
        labels=dict(spec.get("labels") or {}),
        scheduler_name=spec.get("scheduler_name", "volcano"),
        requests=dict(pod.requests),
        deleting=pod.deleting,
        resource_version=str(pod.resource_version),
        owner=OwnerReference.from_dict(owner) if owner else None,
        priority_class_name=spec.get("priority_class_name", ""),
        created_at=pod.created_at,
        started_at=pod.started_at,
        finished_at=pod.finished_at,
        restart_count=pod.restart_count,
    )


@dataclass
class _Tx:
    """One locked mutation of the sim: the state row, the current time, and buffered writes."""

    state: SimState
    now: float
    events: list[SimEvent] = field(default_factory=list)
    nodes: dict[str, SimNode] = field(default_factory=dict)
    dirty_nodes: set[str] = field(default_factory=set)

    def rv(self) -> int:
        self.state.resource_version += 1
        return self.state.resource_version

    def pod_event(self, type_: str, pod: SimPod) -> None:
        pod.resource_version = self.rv()
        self.events.append(SimEvent(kind="pod", type=type_, object=pod_info(pod).to_dict()))

    def node_event(self, type_: str, node: SimNode) -> None:
        node.info["resource_version"] = str(self.rv())
        self.events.append(SimEvent(kind="node", type=type_, object=dict(node.info)))

    def node(self, name: str) -> SimNode | None:
        if name not in self.nodes:
            found = SimNode.objects.filter(name=name).first()
            if found is None:
                return None
            self.nodes[name] = found
        return self.nodes[name]


class DatabaseSimCluster(ClusterBackend):
    """The simulated cluster backed by the ``Sim*`` tables (see the module docstring).

    ``pool``, ``speed``, ``default_duration``, ``startup_delay`` and ``delete_grace`` seed the
    state row the first time any process touches the sim; afterwards the stored values win, so
    every process agrees. ``clock`` overrides the stored scaled clock (tests pass a ManualClock).
    """

    name = "sim"

    def __init__(
        self,
        pool: str = "",
        *,
        speed: float = 1.0,
        default_duration: float = 60.0,
        startup_delay: float = 0.0,
        delete_grace: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        parse_pool_spec(pool)  # fail early on a bad spec
        self.pool = pool
        self.speed = speed
        self.default_duration = default_duration
        self.startup_delay = startup_delay
        self.delete_grace = delete_grace
        self._clock = clock
        self._scaled: ScaledClock | None = None

    # ------------------------------------------------------------ state and locking

    def ensure_state(self) -> SimState:
        """Create the state row and the pool's nodes unless they exist (idempotent, race-safe)."""
        state = SimState.objects.filter(pk=STATE_PK).first()
        if state is not None:
            return state
        now = self._clock.now() if self._clock is not None else 0.0
        try:
            with transaction.atomic():
                state = SimState.objects.create(
                    pk=STATE_PK,
                    speed=self.speed,
                    sim_start=now,
                    wall_start=time.time(),
                    now=now,
                    default_duration=self.default_duration,
                    startup_delay=self.startup_delay,
                    delete_grace=self.delete_grace,
                    pool=self.pool,
                )
                nodes = parse_pool_spec(self.pool)
                for info in nodes:
                    state.resource_version += 1
                    info.resource_version = str(state.resource_version)
                SimNode.objects.bulk_create(
                    [SimNode(name=i.name, info=i.to_dict(), capacity=node_capacity(i), used={}) for i in nodes]
                )
                SimEvent.objects.bulk_create([SimEvent(kind="node", type="ADDED", object=i.to_dict()) for i in nodes])
                state.save(update_fields=["resource_version"])
        except IntegrityError:  # another process seeded it first
            state = SimState.objects.get(pk=STATE_PK)
        return state

    def _clock_now(self, state: SimState) -> float:
        if self._clock is not None:
            return self._clock.now()
        scaled = self._scaled
        if scaled is None or scaled.to_dict() != {
            "speed": state.speed,
            "start": state.sim_start,
            "wall_start": state.wall_start,
        }:
            scaled = self._scaled = ScaledClock(state.speed, state.sim_start, state.wall_start)
        return scaled.now()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[_Tx]:
        with transaction.atomic():
            self.ensure_state()
            state = SimState.objects.select_for_update().get(pk=STATE_PK)
            tx = _Tx(state=state, now=max(self._clock_now(state), state.now))
            yield tx
            if tx.dirty_nodes:
                bulk_update_rows(SimNode, [tx.nodes[n] for n in sorted(tx.dirty_nodes)], ["info", "used"])
            if tx.events:
                SimEvent.objects.bulk_create(tx.events)
            state.now = tx.now
            state.save(update_fields=["now", "resource_version", "seq"])

    def now(self) -> float:
        """Simulated time of the last tick."""
        return self.ensure_state().now

    def settings(self) -> dict[str, Any]:
        """Return the stored clock speed, durations and pool."""
        state = self.ensure_state()
        return {
            "speed": state.speed,
            "now": state.now,
            "default_duration": state.default_duration,
            "startup_delay": state.startup_delay,
            "delete_grace": state.delete_grace,
            "pool": state.pool,
        }

    # ------------------------------------------------------------ reads

    def list_nodes(self) -> list[NodeInfo]:
        self.ensure_state()
        return [NodeInfo.from_dict(n.info) for n in SimNode.objects.order_by("name")]

    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        self.ensure_state()
        query = SimPod.objects.order_by("namespace", "name")
        if namespace is not None:
            query = query.filter(namespace=namespace)
        pods = [pod_info(p) for p in query]
        return [p for p in pods if scheduler_name is None or p.scheduler_name == scheduler_name]

    def get_pod(self, namespace: str, name: str) -> PodInfo:
        pod = SimPod.objects.filter(namespace=namespace, name=name).first()
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod_info(pod)

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> str:
        """The simulated log (see :func:`~volcanoweb.clusters.backends.base.simulated_pod_log`)."""
        pod = SimPod.objects.filter(namespace=namespace, name=name).first()
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        state = self.ensure_state()
        return simulated_pod_log(
            pod_info(pod),
            max(self._clock_now(state), state.now),  # the clock's time now, not only the last tick's
            container=container,
            tail_lines=tail_lines,
            previous=previous,
            planned_finish=pod.finish_at,
        )

    def node_usage(self, name: str) -> dict[str, int]:
        """Resources admitted on a node (integers)."""
        node = SimNode.objects.filter(name=name).first()
        if node is None:
            raise NotFound(f"node {name} not found")
        return dict(node.used)

    # ------------------------------------------------------------ pods

    def create_pod(self, spec: PodSpec) -> PodInfo:
        with self._locked() as tx:
            if SimPod.objects.filter(namespace=spec.namespace, name=spec.name).exists():
                raise Conflict(f"pod {spec.namespace}/{spec.name} already exists")
            tx.state.seq += 1
            uid = str(uuid.uuid5(_UID_NAMESPACE, f"{spec.namespace}/{spec.name}/{tx.state.seq}"))
            pod = SimPod(
                namespace=spec.namespace,
                name=spec.name,
                uid=uid,
                spec=spec.to_dict(),
                requests=spec.requests(),
                created_at=tx.now,
            )
            tx.pod_event("ADDED", pod)
            pod.save()
            return pod_info(pod)

    def create_pods(self, specs: Iterable[PodSpec]) -> dict[tuple[str, str], PodInfo | BackendError]:
        """Create many pods in one transaction; return each pod's info, or :class:`Conflict`."""
        out: dict[tuple[str, str], PodInfo | BackendError] = {}
        wanted = list(specs)
        if not wanted:
            return out
        with self._locked() as tx:
            by_ns: dict[str, set[str]] = {}
            for spec in wanted:
                by_ns.setdefault(spec.namespace, set()).add(spec.name)
            existing = {
                (ns, name)
                for ns, names in by_ns.items()
                for name in SimPod.objects.filter(namespace=ns, name__in=names).values_list("name", flat=True)
            }
            rows: list[SimPod] = []
            for spec in wanted:
                key = (spec.namespace, spec.name)
                if key in existing:
                    out[key] = Conflict(f"pod {spec.namespace}/{spec.name} already exists")
                    continue
                existing.add(key)
                tx.state.seq += 1
                pod = SimPod(
                    namespace=spec.namespace,
                    name=spec.name,
                    uid=str(uuid.uuid5(_UID_NAMESPACE, f"{spec.namespace}/{spec.name}/{tx.state.seq}")),
                    spec=spec.to_dict(),
                    requests=spec.requests(),
                    created_at=tx.now,
                )
                tx.pod_event("ADDED", pod)
                rows.append(pod)
                out[key] = pod_info(pod)
            SimPod.objects.bulk_create(rows, batch_size=1000)
        return out

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        with self._locked() as tx:
            pod = SimPod.objects.filter(namespace=namespace, name=name).first()
            if pod is None:
                return False
            grace = tx.state.delete_grace if grace_period_seconds is None else float(grace_period_seconds)
            self._delete(tx, pod, grace)
            return True

    def bind(self, namespace: str, name: str, node: str) -> None:
        error = self.bind_many([(namespace, name, node)])[(namespace, name)]
        if error is not None:
            raise error

    def bind_many(self, binds: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], BackendError | None]:
        """Bind many pods in one transaction; return each pod's error (None when bound).

        Errors are those of :meth:`bind`: :class:`NotFound` (pod or node) and :class:`Conflict`
        (already bound: the message names the node, see :attr:`Conflict.args`).
        """
        wanted = list(binds)
        results: dict[tuple[str, str], BackendError | None] = {}
        if not wanted:
            return results
        with self._locked() as tx:
            by_ns: dict[str, set[str]] = {}
            for ns, pod_name, _ in wanted:
                by_ns.setdefault(ns, set()).add(pod_name)
            pods = {
                (p.namespace, p.name): p
                for ns, names in by_ns.items()
                for p in SimPod.objects.filter(namespace=ns, name__in=names)
            }
            for n in SimNode.objects.filter(name__in={node for _, _, node in wanted}):
                tx.nodes[n.name] = n
            changed: list[SimPod] = []
            for ns, pod_name, node_name in wanted:
                pod = pods.get((ns, pod_name))
                target = tx.nodes.get(node_name)
                if pod is None:
                    results[(ns, pod_name)] = NotFound(f"pod {ns}/{pod_name} not found")
                elif pod.node_name:
                    results[(ns, pod_name)] = Conflict(
                        f"pod {ns}/{pod_name} is already assigned to node {pod.node_name!r}", pod.node_name
                    )
                elif pod.deleting:
                    results[(ns, pod_name)] = Conflict(f"pod {ns}/{pod_name} is being deleted")
                elif target is None:
                    results[(ns, pod_name)] = NotFound(f"node {node_name} not found")
                else:
                    pod.node_name = node_name
                    if target.info.get("ready", True):
                        pod.start_at = tx.now + tx.state.startup_delay
                    tx.pod_event("MODIFIED", pod)
                    changed.append(pod)
                    results[(ns, pod_name)] = None
            bulk_update_rows(SimPod, changed, ["node_name", "start_at", "resource_version"])
        return results

    def evict(self, namespace: str, name: str) -> None:
        with self._locked() as tx:
            pod = SimPod.objects.filter(namespace=namespace, name=name).first()
            if pod is None:
                raise NotFound(f"pod {namespace}/{name} not found")
            if pod.deleting:
                return
            if pod.phase not in ("Succeeded", "Failed"):
                pod.reason, pod.message = "Evicted", "Evicted through the Eviction API"
            self._delete(tx, pod, tx.state.delete_grace)

    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        with self._locked() as tx:
            pod = SimPod.objects.filter(namespace=namespace, name=name).first()
            if pod is None:
                raise NotFound(f"pod {namespace}/{name} not found")
            current = dict(pod.spec.get("annotations") or {})
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            pod.spec = {**pod.spec, "annotations": current}
            tx.pod_event("MODIFIED", pod)
            pod.save(update_fields=["spec", "resource_version"])
            return pod_info(pod)

    def fail_pod(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """End an unfinished pod now with an exit code (137: killed; 0: Succeeded)."""
        with self._locked() as tx:
            pod = SimPod.objects.filter(namespace=namespace, name=name).first()
            if pod is None:
                raise NotFound(f"pod {namespace}/{name} not found")
            if pod.phase in ("Succeeded", "Failed"):
                raise Conflict(f"pod {namespace}/{name} already finished ({pod.phase})")
            pod.start_at = pod.finish_at = None
            phase = "Succeeded" if exit_code == 0 else "Failed"
            self._end(tx, pod, phase, exit_code, reason, "", tx.now)
            pod.save(update_fields=_POD_FIELDS)

    def restart_container(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> PodInfo:
        """The running pod's main container exits with ``exit_code``: restarted in place (restartCount + 1,
        still Running, its simulated run starts again) under restartPolicy OnFailure (non-zero code) or
        Always, else the pod ends as with :meth:`fail_pod`."""
        with self._locked() as tx:
            pod = SimPod.objects.filter(namespace=namespace, name=name).first()
            if pod is None:
                raise NotFound(f"pod {namespace}/{name} not found")
            if pod.phase != "Running":
                raise Conflict(f"pod {namespace}/{name} is not running ({pod.phase})")
            if restarts_in_place(pod.spec.get("restart_policy") or "Never", exit_code):
                pod.restart_count += 1
                pod.reason, pod.message = reason, f"container restarted after exit code {exit_code}"
                pod.finish_at = tx.now + self._duration(tx, pod)
                tx.pod_event("MODIFIED", pod)
            else:
                pod.start_at = pod.finish_at = None
                phase = "Succeeded" if exit_code == 0 else "Failed"
                self._end(tx, pod, phase, exit_code, reason if exit_code else "Completed", "", tx.now)
            pod.save(update_fields=_POD_FIELDS)
            return pod_info(pod)

    # ------------------------------------------------------------ nodes

    def add_node(self, info: NodeInfo) -> None:
        """Add a node (ADDED event); :class:`Conflict` if the name is taken."""
        with self._locked() as tx:
            if SimNode.objects.filter(name=info.name).exists():
                raise Conflict(f"node {info.name} already exists")
            node = SimNode(name=info.name, info=info.to_dict(), capacity=node_capacity(info), used={})
            tx.node_event("ADDED", node)
            node.save()

    def remove_node(self, name: str) -> None:
        """Delete a node; its pods fail with reason NodeLost."""
        with self._locked() as tx:
            node = self._node(tx, name)
            self._lose_pods(tx, name, evict=False)
            tx.node_event("DELETED", node)
            tx.dirty_nodes.discard(name)
            node.delete()

    def fail_node(self, name: str, evict_pods: bool = True) -> None:
        """Make a node NotReady and unreachable-tainted; its unfinished pods are evicted (NodeLost)."""
        with self._locked() as tx:
            node = self._node(tx, name)
            taints = [t for t in node.info.get("taints") or [] if t["key"] != UNREACHABLE_TAINT]
            taints += [
                Taint(UNREACHABLE_TAINT, "", "NoSchedule").to_dict(),
                Taint(UNREACHABLE_TAINT, "", "NoExecute").to_dict(),
            ]
            node.info = {**node.info, "ready": False, "taints": taints}
            tx.dirty_nodes.add(name)
            tx.node_event("MODIFIED", node)
            self._lose_pods(tx, name, evict=evict_pods)

    def recover_node(self, name: str) -> None:
        """Make a failed node Ready again; pods bound to it start."""
        with self._locked() as tx:
            node = self._node(tx, name)
            taints = [t for t in node.info.get("taints") or [] if t["key"] != UNREACHABLE_TAINT]
            node.info = {**node.info, "ready": True, "taints": taints}
            tx.dirty_nodes.add(name)
            tx.node_event("MODIFIED", node)
            waiting = SimPod.objects.filter(node_name=name, phase="Pending", admitted=False, start_at__isnull=True)
            for pod in waiting:
                pod.start_at = tx.now + tx.state.startup_delay
                pod.save(update_fields=["start_at"])

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        """Set ``spec.unschedulable`` on a node."""
        with self._locked() as tx:
            node = self._node(tx, name)
            node.info = {**node.info, "unschedulable": unschedulable}
            tx.dirty_nodes.add(name)
            tx.node_event("MODIFIED", node)

    # ------------------------------------------------------------ services etc.

    def _ensure_object(self, kind: str, namespace: str, name: str, data: dict[str, Any]) -> bool:
        with self._locked():
            if SimObject.objects.filter(kind=kind, namespace=namespace, name=name).exists():
                return False
            SimObject.objects.create(kind=kind, namespace=namespace, name=name, data=data)
            return True

    def _delete_object(self, kind: str, namespace: str, name: str) -> bool:
        deleted, _ = SimObject.objects.filter(kind=kind, namespace=namespace, name=name).delete()
        return bool(deleted)

    def ensure_service(self, spec: ServiceSpec) -> bool:
        data = {
            "selector": dict(spec.selector),
            "ports": list(spec.ports),
            "labels": dict(spec.labels),
            "owner": spec.owner.to_dict() if spec.owner else None,
            "headless": spec.headless,
        }
        return self._ensure_object("service", spec.namespace, spec.name, data)

    def delete_service(self, namespace: str, name: str) -> bool:
        return self._delete_object("service", namespace, name)

    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        doc = {"data": dict(data), "labels": dict(labels or {}), "owner": owner.to_dict() if owner else None}
        return self._ensure_object("configmap", namespace, name, doc)

    def delete_config_map(self, namespace: str, name: str) -> bool:
        return self._delete_object("configmap", namespace, name)

    def ensure_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
        type: str = "Opaque",
    ) -> bool:
        doc = {
            "data": dict(data),
            "labels": dict(labels or {}),
            "owner": owner.to_dict() if owner else None,
            "type": type,
        }
        return self._ensure_object("secret", namespace, name, doc)

    def delete_secret(self, namespace: str, name: str) -> bool:
        return self._delete_object("secret", namespace, name)

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a stored service/configmap/secret document (tests and the UI)."""
        found = SimObject.objects.filter(kind=kind, namespace=namespace, name=name).first()
        return None if found is None else dict(found.data)

    # ------------------------------------------------------------ kubelet and events

    def tick(self) -> int:
        """Fire every pod timer due at or before now, in time order; return how many fired."""
        with self._locked() as tx:
            now = tx.now
            due = SimPod.objects.filter(Q(start_at__lte=now) | Q(finish_at__lte=now) | Q(remove_at__lte=now))
            pods = {p.pk: p for p in due}
            if not pods:
                return 0
            for node in SimNode.objects.filter(name__in={p.node_name for p in pods.values() if p.node_name}):
                tx.nodes[node.name] = node
            heap: list[tuple[float, int, str, int]] = []
            seq = 0
            for pod in pods.values():
                for kind in ("start", "finish", "remove"):
                    at = getattr(pod, f"{kind}_at")
                    if at is not None and at <= now:
                        seq += 1
                        heap.append((at, seq, kind, pod.pk))
            heapq.heapify(heap)
            fired = 0
            removed: set[int] = set()
            while heap:
                at, _, kind, pk = heapq.heappop(heap)
                pod = pods[pk]
                if pk in removed or getattr(pod, f"{kind}_at") != at:
                    continue
                setattr(pod, f"{kind}_at", None)
                fired += 1
                if kind == "start":
                    self._start(tx, pod, at)
                    if pod.finish_at is not None and pod.finish_at <= now:
                        seq += 1
                        heapq.heappush(heap, (pod.finish_at, seq, "finish", pk))
                elif kind == "finish":
                    self._finish(tx, pod, at)
                else:
                    self._remove(tx, pod)
                    removed.add(pk)
            SimPod.objects.filter(pk__in=removed).delete()
            bulk_update_rows(SimPod, [p for pk, p in pods.items() if pk not in removed], _POD_FIELDS)
            return fired

    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        """Tick, then consume the queued events (deleted in the caller's transaction, if any)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            with transaction.atomic():
                self.tick()
                rows = list(SimEvent.objects.order_by("id")[:MAX_EVENTS_PER_POLL])
                if rows:
                    SimEvent.objects.filter(id__lte=rows[-1].id).delete()
                    return [BackendEvent.from_dict({"kind": r.kind, "type": r.type, "object": r.object}) for r in rows]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            time.sleep(min(0.05, remaining))

    def pending_events(self) -> int:
        """Return how many events wait to be polled."""
        return SimEvent.objects.count()

    # ------------------------------------------------------------ internals

    def _node(self, tx: _Tx, name: str) -> SimNode:
        node = tx.node(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return node

    def _start(self, tx: _Tx, pod: SimPod, at: float) -> None:
        """The simulated kubelet admits and starts a bound pod."""
        node = tx.node(pod.node_name) if pod.node_name else None
        if node is None or not node.info.get("ready", True) or pod.phase != "Pending" or pod.deleting:
            return
        labels = node.info.get("labels") or {}
        for key, value in (pod.spec.get("node_selector") or {}).items():
            if labels.get(key) != value:
                self._end(tx, pod, "Failed", None, "NodeAffinity", "node selector mismatch", at)
                return
        usage = integer_resources(pod.requests, pod_slot=True)
        for resource, amount in usage.items():
            free = node.capacity.get(resource, 0) - node.used.get(resource, 0)
            if amount > free:
                self._end(
                    tx, pod, "Failed", None, f"OutOf{resource}", f"Node didn't have enough resource: {resource}", at
                )
                return
        pod.usage, pod.admitted = usage, True
        node.used = {k: node.used.get(k, 0) + usage.get(k, 0) for k in {*node.used, *usage}}
        tx.dirty_nodes.add(node.name)
        pod.phase, pod.started_at = "Running", at
        pod.finish_at = at + self._duration(tx, pod)
        tx.pod_event("MODIFIED", pod)

    @staticmethod
    def _duration(tx: _Tx, pod: SimPod) -> float:
        """The simulated run time: the duration annotation, else the default."""
        annotations = pod.spec.get("annotations") or {}
        if SIM_DURATION_ANNOTATION in annotations:
            with contextlib.suppress(ValueError):
                return parse_duration(annotations[SIM_DURATION_ANNOTATION], plain_seconds=True)
        return tx.state.default_duration

    def _finish(self, tx: _Tx, pod: SimPod, at: float) -> None:
        if pod.phase != "Running":
            return
        try:
            code = int((pod.spec.get("annotations") or {}).get(SIM_EXIT_CODE_ANNOTATION, "0"))
        except ValueError:
            code = 1
        if code == 0:
            self._end(tx, pod, "Succeeded", 0, "Completed", "", at)
        else:
            self._end(tx, pod, "Failed", code, "Error", "", at)

    def _end(self, tx: _Tx, pod: SimPod, phase: str, code: int | None, reason: str, message: str, at: float) -> None:
        self._release(tx, pod)
        pod.phase, pod.exit_code, pod.reason, pod.message, pod.finished_at = phase, code, reason, message, at
        tx.pod_event("MODIFIED", pod)

    def _release(self, tx: _Tx, pod: SimPod) -> None:
        if pod.admitted:
            node = tx.node(pod.node_name)
            if node is not None:
                node.used = {k: v - pod.usage.get(k, 0) for k, v in node.used.items()}
                tx.dirty_nodes.add(node.name)
            pod.admitted, pod.usage = False, {}

    def _delete(self, tx: _Tx, pod: SimPod, grace: float) -> None:
        if pod.deleting:
            return
        running = pod.node_name and pod.phase in ("Pending", "Running")
        if grace <= 0 or not running:
            self._remove(tx, pod)
            pod.delete()
            return
        pod.deleting, pod.start_at, pod.remove_at = True, None, tx.now + grace
        tx.pod_event("MODIFIED", pod)
        pod.save(update_fields=_POD_FIELDS)

    def _remove(self, tx: _Tx, pod: SimPod) -> None:
        """Release a pod's resources and record its DELETED event (the caller deletes the row)."""
        self._release(tx, pod)
        pod.deleting = True
        tx.pod_event("DELETED", pod)

    def _lose_pods(self, tx: _Tx, node: str, evict: bool) -> None:
        for pod in (
            SimPod.objects.filter(node_name=node)
            .exclude(phase__in=("Succeeded", "Failed"))
            .order_by("namespace", "name")
        ):
            if evict:
                pod.reason, pod.message = "NodeLost", f"node {node} failed"
                self._remove(tx, pod)
                pod.delete()
            else:
                pod.start_at = pod.finish_at = None
                self._end(tx, pod, "Failed", None, "NodeLost", f"node {node} failed", tx.now)
                pod.save(update_fields=_POD_FIELDS)
