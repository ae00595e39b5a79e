"""The simulated cluster's engine: ONE kubelet state machine over pod and node records, behind a store.

The engine is pure code (no Django, no threads): it reads and changes :class:`PodRecord` and
:class:`NodeRecord` values inside a :class:`SimTx` (one locked change of the cluster) that a
:class:`SimStore` opens. Two stores exist, and each backend is that store plus :class:`SimEngine`:

* :class:`~volcanoweb.clusters.backends.sim.MemoryStore` (``SimCluster``): dicts under a thread lock, for
  unit tests and tools;
* :class:`~volcanoweb.clusters.backends.simdb.DatabaseStore` (``DatabaseSimCluster``): the ``Sim*`` tables, shared
  by every process of the product; on PostgreSQL a transaction locks the pods and nodes it changes (node-level
  changes, ``exclusive``, lock the whole cluster), on SQLite the ``SimState`` row.

See ``docs/adr/0014-one-simulated-cluster-engine.md``.

The engine's parts: :mod:`.simrecords` (the pod and node records, the settings), :mod:`.simstore` (one
change, :class:`~.simstore.SimTx`, and the :class:`~.simstore.SimStore` interface), :mod:`.simtransitions`
(the kubelet state machine: ``create_pod`` → Pending → bind → Running → Succeeded/Failed, deletion, node
failure) and this module, the :class:`ClusterBackend` over them.

Clock
=====

Every transaction reads ``now = max(clock.now(), stored now)`` (the stores keep the time of the changes
they made), so the simulated time never goes back and every call (not only :meth:`SimEngine.tick`) sees the
current time. Timers
(``start_at``/``finish_at``/``remove_at``) fire only in :func:`~.simtransitions.tick`, due ones in time order (ties by
pod key, then start/finish/remove), so a run is deterministic for a given sequence of calls and clock
readings. Resources are the scheduler's integers (cpu in millicores, memory in bytes, counts).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from volcanoweb.core.stageprof import stage

from .base import (
    USAGE_FACTOR_LABEL,
    BackendError,
    BackendEvent,
    ClusterBackend,
    Conflict,
    NodeInfo,
    NodeMetrics,
    NotFound,
    OwnerReference,
    PodInfo,
    PodSpec,
    ServiceSpec,
    Taint,
    restarts_in_place,
)
from .simlog import simulated_log_time, simulated_pod_log
from .simrecords import NodeRecord, PodKey, PodRecord
from .simstore import SimStore, SimTx
from .simtransitions import bind_pod, delete, duration, lose_pods, new_node, new_pod, node_event, pod_event, stop, tick

UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
#: At most this many events per :meth:`SimEngine.poll_events` call (the next call returns the rest).
MAX_EVENTS_PER_POLL = 5000
#: Seconds between two looks at the store while :meth:`SimEngine.poll_events` waits.
POLL_INTERVAL = 0.05


def _without_unreachable(info: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in info.get("taints") or [] if t["key"] != UNREACHABLE_TAINT]


# ---------------------------------------------------------------- the backend


class SimEngine(ClusterBackend):
    """The simulated cluster behind the :class:`ClusterBackend` interface, over a :class:`SimStore`."""

    name = "sim"

    def __init__(self, store: SimStore) -> None:
        self.store = store

    @contextlib.contextmanager
    def _tx(self, *, exclusive: bool = False) -> Iterator[SimTx]:
        with self.store.transaction(exclusive=exclusive) as tx:
            yield tx

    # ------------------------------------------------------------ time and settings

    def now(self) -> float:
        """Simulated time of the last change."""
        return self.store.now()

    def settings(self) -> dict[str, Any]:
        """Return the clock speed, durations and pool the cluster was created with, and its time."""
        settings = self.store.settings()
        return {
            "speed": settings.speed,
            "now": self.store.now(),
            "default_duration": settings.default_duration,
            "startup_delay": settings.startup_delay,
            "delete_grace": settings.delete_grace,
            "pool": settings.pool,
        }

    # ------------------------------------------------------------ reads

    def list_nodes(self) -> list[NodeInfo]:
        return [NodeInfo.from_dict(n.info) for n in self.store.list_nodes()]

    def node_metrics(self) -> list[NodeMetrics]:
        """The usage model: each node uses its pool's usage factor (the ``sim.volcanoweb.io/usage-factor`` label,
        default 1) times the cpu and memory requests of the pods admitted on it, measured now (wall time)."""
        now = time.time()
        out = []
        for n in self.store.list_nodes():
            labels = n.info.get("labels") or {}
            try:
                factor = float(labels.get(USAGE_FACTOR_LABEL, "1"))
            except ValueError:
                factor = 1.0
            cpu, memory = n.used.get("cpu", 0), n.used.get("memory", 0)
            out.append(NodeMetrics(n.name, round(cpu * factor), round(memory * factor), now))
        return out

    def node_usage(self, name: str) -> dict[str, int]:
        """Resources admitted on a node (integers: cpu millicores, memory bytes, pod count)."""
        node = self.store.get_node(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return dict(node.used)

    def list_pods(self, scheduler_name: str | None = None, namespace: str | None = None) -> list[PodInfo]:
        pods = [p.info() for p in self.store.list_pods(namespace)]
        return [p for p in pods if scheduler_name is None or p.scheduler_name == scheduler_name]

    def get_pod(self, namespace: str, name: str) -> PodInfo:
        return self._stored_pod(namespace, name).info()

    def _stored_pod(self, namespace: str, name: str) -> PodRecord:
        pod = self.store.get_pod((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod

    def pod_log(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
    ) -> str:
        """The simulated log (see :func:`~volcanoweb.clusters.backends.simlog.simulated_pod_log`)."""
        pod = self._stored_pod(namespace, name)
        return simulated_pod_log(
            pod.info(),
            self.store.clock_now(),  # the clock's time now, not only the last change's
            container=container,
            tail_lines=tail_lines,
            previous=previous,
            planned_finish=pod.finish_at,
        )

    def log_wall_time(self, line: str) -> float | None:
        """Map a log line's simulated time to the wall clock through the clock's speed (now, for a still clock)."""
        at = simulated_log_time(line)
        if at is None:
            return None
        speed = self.store.settings().speed
        wall = time.time()
        return wall if speed <= 0 else wall - max(0.0, self.store.clock_now() - at) / speed

    # ------------------------------------------------------------ pods

    @stage("sim create pods")
    def create_pod(self, spec: PodSpec) -> PodInfo:
        with self._tx() as tx:
            if tx.pod((spec.namespace, spec.name)) is not None:
                raise Conflict(f"pod {spec.namespace}/{spec.name} already exists")
            return new_pod(tx, spec).info()

    @stage("sim create pods")
    def create_pods(self, specs: Iterable[PodSpec]) -> dict[PodKey, PodInfo | BackendError]:
        """Create many pods in one transaction; return each pod's info, or :class:`Conflict`."""
        out: dict[PodKey, PodInfo | BackendError] = {}
        wanted = list(specs)
        if not wanted:
            return out
        with self._tx() as tx:
            taken = set(tx.pods({(s.namespace, s.name) for s in wanted}))
            for spec in wanted:
                key = (spec.namespace, spec.name)
                if key in taken:
                    out[key] = Conflict(f"pod {spec.namespace}/{spec.name} already exists")
                    continue
                taken.add(key)
                out[key] = new_pod(tx, spec).info()
        return out

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        with self._tx() as tx:
            pod = tx.pod((namespace, name))
            if pod is None:
                return False
            grace = tx.settings.delete_grace if grace_period_seconds is None else float(grace_period_seconds)
            delete(tx, pod, grace)
            return True

    @stage("sim bind")
    def bind(self, namespace: str, name: str, node: str) -> None:
        error = self.bind_many([(namespace, name, node)])[(namespace, name)]
        if error is not None:
            raise error

    @stage("sim bind")
    def bind_many(self, binds: Iterable[tuple[str, str, str]]) -> dict[PodKey, BackendError | None]:
        """Bind many pods in one transaction; return each pod's error (None when bound).

        Errors are those of :meth:`bind`: :class:`NotFound` (pod or node) and :class:`Conflict`
        (already bound: the message names the node, see the message).
        """
        wanted = list(binds)
        results: dict[PodKey, BackendError | None] = {}
        if not wanted:
            return results
        with self._tx() as tx:
            pods = tx.pods({(ns, name) for ns, name, _ in wanted})
            tx.nodes({node for _, _, node in wanted}, lock=False)  # a bind reads its node (Ready), never changes it
            for ns, name, node in wanted:
                results[(ns, name)] = bind_pod(tx, pods.get((ns, name)), (ns, name), node)
        return results

    def evict(self, namespace: str, name: str) -> None:
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.deleting:
                return
            if not pod.finished:
                pod.reason, pod.message = "Evicted", "Evicted through the Eviction API"
            delete(tx, pod, tx.settings.delete_grace)

    def patch_pod_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> PodInfo:
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            current = dict(pod.spec.get("annotations") or {})
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            pod.spec = {**pod.spec, "annotations": current}
            pod_event(tx, "MODIFIED", pod)
            return pod.info()

    def fail_pod(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """End an unfinished pod now with an exit code (137: killed; 0: Succeeded)."""
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.finished:
                raise Conflict(f"pod {namespace}/{name} already finished ({pod.phase})")
            stop(tx, pod, exit_code, reason)

    def restart_container(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> PodInfo:
        """The running pod's main container exits with ``exit_code``: restarted in place (restartCount + 1,
        still Running, its simulated run starts again) under restartPolicy OnFailure (non-zero code) or
        Always, else the pod ends as with :meth:`fail_pod`."""
        with self._tx() as tx:
            pod = self._pod(tx, namespace, name)
            if pod.phase != "Running":
                raise Conflict(f"pod {namespace}/{name} is not running ({pod.phase})")
            if restarts_in_place(pod.spec.get("restart_policy") or "Never", exit_code):
                pod.restart_count += 1
                pod.reason, pod.message = reason, f"container restarted after exit code {exit_code}"
                pod.finish_at = tx.now + duration(tx, pod)
                pod_event(tx, "MODIFIED", pod)
            else:
                stop(tx, pod, exit_code, reason if exit_code else "Completed")
            return pod.info()

    @staticmethod
    def _pod(tx: SimTx, namespace: str, name: str) -> PodRecord:
        pod = tx.pod((namespace, name))
        if pod is None:
            raise NotFound(f"pod {namespace}/{name} not found")
        return pod

    # ------------------------------------------------------------ nodes

    def add_node(self, info: NodeInfo) -> None:
        """Add a node (ADDED event); :class:`Conflict` if the name is taken."""
        with self._tx(exclusive=True) as tx:
            new_node(tx, info)

    def remove_node(self, name: str) -> None:
        """Delete a node; its unfinished pods fail with reason NodeLost."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            lose_pods(tx, name, evict=False)
            node_event(tx, "DELETED", node)
            tx.remove_node(node)

    def fail_node(self, name: str, evict_pods: bool = True) -> None:
        """Make a node NotReady and unreachable-tainted; its unfinished pods are evicted (deleted, reason
        NodeLost), or with ``evict_pods=False`` marked Failed with reason NodeLost."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            unreachable = [Taint(UNREACHABLE_TAINT, "", effect).to_dict() for effect in ("NoSchedule", "NoExecute")]
            taints = [*_without_unreachable(node.info), *unreachable]
            node.info = {**node.info, "ready": False, "taints": taints}
            node_event(tx, "MODIFIED", node)
            lose_pods(tx, name, evict=evict_pods)

    def recover_node(self, name: str) -> None:
        """Make a failed node Ready again; pods bound to it start."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            node.info = {**node.info, "ready": True, "taints": _without_unreachable(node.info)}
            node_event(tx, "MODIFIED", node)
            for pod in tx.pods_on_node(name):
                if pod.phase == "Pending" and not pod.admitted and pod.start_at is None:
                    pod.start_at = tx.now + tx.settings.startup_delay

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        """Set ``spec.unschedulable`` on a node."""
        with self._tx(exclusive=True) as tx:
            node = self._node(tx, name)
            node.info = {**node.info, "unschedulable": unschedulable}
            node_event(tx, "MODIFIED", node)

    @staticmethod
    def _node(tx: SimTx, name: str) -> NodeRecord:
        node = tx.node(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        return node

    # ------------------------------------------------------------ services, config maps, secrets

    def ensure_service(self, spec: ServiceSpec) -> bool:
        data = {
            "selector": dict(spec.selector),
            "ports": list(spec.ports),
            "labels": dict(spec.labels),
            "owner": spec.owner.to_dict() if spec.owner else None,
            "headless": spec.headless,
        }
        return self.store.ensure_object("service", spec.namespace, spec.name, data)

    def delete_service(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("service", namespace, name)

    def ensure_config_map(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: OwnerReference | None = None,
    ) -> bool:
        doc = {"data": dict(data), "labels": dict(labels or {}), "owner": owner.to_dict() if owner else None}
        return self.store.ensure_object("configmap", namespace, name, doc)

    def delete_config_map(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("configmap", namespace, name)

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
        return self.store.ensure_object("secret", namespace, name, doc)

    def delete_secret(self, namespace: str, name: str) -> bool:
        return self.store.delete_object("secret", namespace, name)

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Return a stored service/configmap/secret document (tests and the UI)."""
        return self.store.get_object(kind, namespace, name)

    # ------------------------------------------------------------ kubelet and events

    @stage("sim kubelet")
    def tick(self) -> int:
        """Fire every pod timer due at or before now, in time order; return how many fired."""
        with self._tx() as tx:
            return tick(tx)

    def poll_events(self, timeout: float = 0.0) -> list[BackendEvent]:
        """Tick, then take the queued events (with the database store: deleted in the caller's transaction)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            with self.store.atomic():
                self.tick()
                events = self.store.take_events(MAX_EVENTS_PER_POLL)
            if events:
                return events
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            self.store.wait(min(POLL_INTERVAL, remaining))

    def pending_events(self) -> int:
        """Return how many events wait to be polled."""
        return self.store.pending_events()
