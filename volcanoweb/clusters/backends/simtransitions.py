"""The simulated cluster's transitions: the kubelet state machine as plain functions over a :class:`SimTx`.

Each function changes the records of one change (:class:`~.simstore.SimTx`) and emits the events the
change makes; the engine (:mod:`.simengine`) calls them inside its transactions, and :func:`tick` fires
the due timers. See ``docs/adr/0014-one-simulated-cluster-engine.md``.

Transitions
===========

``create_pod`` → Pending (no node) → ``bind`` → Pending on the node, start timer at ``now +
startup_delay`` (only when the node is Ready) → :func:`start` by the simulated kubelet: Running (its
integer requests and one pod slot are admitted on the node), or Failed with ``NodeAffinity`` (node
selector mismatch) or ``OutOf<resource>`` (the node is full) → :func:`finish` after the duration from the
``sim.volcanoweb.io/duration`` annotation (else the default) with the exit code from
``sim.volcanoweb.io/exit-code`` (default 0): Succeeded/Completed or Failed/Error. :func:`end` releases
what the pod held. A graceful :func:`delete` of a pod bound and unfinished marks it ``deleting`` and
arms a remove timer; otherwise :func:`remove` drops it at once (DELETED). :func:`lose_pods` is a node
failure (pods evicted, or failed, with ``NodeLost``). Injections: ``fail_pod`` ends a pod now (exit code 0
is Succeeded), ``restart_container`` restarts it in place or ends it, per its restartPolicy.
"""

from __future__ import annotations

import contextlib
import heapq
import uuid

from scheduler.quantity import parse_duration

from .base import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    BackendError,
    BackendEvent,
    Conflict,
    EventType,
    NodeInfo,
    NotFound,
    PodSpec,
)
from .simrecords import NodeRecord, PodKey, PodRecord, TimerKind, integer_resources, node_capacity
from .simstore import SimTx

_UID_NAMESPACE = uuid.UUID("0b6c3b0e-8f0e-4f57-9d7c-2a0f3f7f6a11")
_TIMERS: tuple[TimerKind, ...] = ("start", "finish", "remove")


def pod_event(tx: SimTx, type_: EventType, pod: PodRecord) -> None:
    pod.resource_version = tx.next_rv()
    tx.emit(BackendEvent("pod", type_, pod.info()))


def node_event(tx: SimTx, type_: EventType, node: NodeRecord) -> None:
    node.info = {**node.info, "resource_version": str(tx.next_rv())}
    tx.emit(BackendEvent("node", type_, NodeInfo.from_dict(node.info)))


def new_pod(tx: SimTx, spec: PodSpec) -> PodRecord:
    """A new pod (ADDED); the caller checked that its name is free."""
    uid = str(uuid.uuid5(_UID_NAMESPACE, f"{spec.namespace}/{spec.name}/{tx.next_seq()}"))
    pod = PodRecord(spec.namespace, spec.name, uid, spec.to_dict(), spec.requests(), created_at=tx.now)
    pod_event(tx, "ADDED", pod)
    tx.add_pod(pod)
    return pod


def bind_pod(tx: SimTx, pod: PodRecord | None, key: PodKey, node_name: str) -> BackendError | None:
    """Bind a pod to a node (its start timer is armed when the node is Ready); the error otherwise."""
    namespace, name = key
    if pod is None:
        return NotFound(f"pod {namespace}/{name} not found")
    if pod.node_name:
        return Conflict(f"pod {namespace}/{name} is already assigned to node {pod.node_name!r}")
    if pod.deleting:
        return Conflict(f"pod {namespace}/{name} is being deleted")
    node = tx.node(node_name)
    if node is None:
        return NotFound(f"node {node_name} not found")
    pod.node_name = node_name
    if node.ready:
        pod.start_at = tx.now + tx.settings.startup_delay
    pod_event(tx, "MODIFIED", pod)
    return None


def start(tx: SimTx, pod: PodRecord, at: float) -> None:
    """The simulated kubelet admits and starts a bound pod."""
    node = tx.node(pod.node_name) if pod.node_name else None
    if node is None or not node.ready or pod.phase != "Pending" or pod.deleting:
        return
    labels = node.info.get("labels") or {}
    for key, value in (pod.spec.get("node_selector") or {}).items():
        if labels.get(key) != value:
            end(tx, pod, "Failed", None, "NodeAffinity", "node selector mismatch", at)
            return
    usage = integer_resources(pod.requests, pod_slot=True)
    for resource, amount in usage.items():
        if amount > node.capacity.get(resource, 0) - node.used.get(resource, 0):
            end(tx, pod, "Failed", None, f"OutOf{resource}", f"Node didn't have enough resource: {resource}", at)
            return
    pod.usage, pod.admitted = usage, True
    node.used = {k: node.used.get(k, 0) + usage.get(k, 0) for k in {*node.used, *usage}}
    pod.phase, pod.started_at = "Running", at
    pod.finish_at = at + duration(tx, pod)
    pod_event(tx, "MODIFIED", pod)


def duration(tx: SimTx, pod: PodRecord) -> float:
    """The simulated run time: the duration annotation, else the default."""
    annotations = pod.spec.get("annotations") or {}
    if SIM_DURATION_ANNOTATION in annotations:
        with contextlib.suppress(ValueError):
            return parse_duration(annotations[SIM_DURATION_ANNOTATION], plain_seconds=True)
    return tx.settings.default_duration


def finish(tx: SimTx, pod: PodRecord, at: float) -> None:
    """The run ends with the exit code from the annotation (not a number: 1)."""
    if pod.phase != "Running":
        return
    try:
        code = int((pod.spec.get("annotations") or {}).get(SIM_EXIT_CODE_ANNOTATION, "0"))
    except ValueError:
        code = 1
    if code == 0:
        end(tx, pod, "Succeeded", 0, "Completed", "", at)
    else:
        end(tx, pod, "Failed", code, "Error", "", at)


def end(tx: SimTx, pod: PodRecord, phase: str, code: int | None, reason: str, message: str, at: float) -> None:
    release(tx, pod)
    pod.phase, pod.exit_code, pod.reason, pod.message, pod.finished_at = phase, code, reason, message, at
    pod_event(tx, "MODIFIED", pod)


def release(tx: SimTx, pod: PodRecord) -> None:
    """Give back what an admitted pod holds on its node."""
    if pod.admitted:
        node = tx.node(pod.node_name)
        if node is not None:
            node.used = {k: v - pod.usage.get(k, 0) for k, v in node.used.items()}
        pod.admitted, pod.usage = False, {}


def delete(tx: SimTx, pod: PodRecord, grace: float) -> None:
    """Delete a pod: gracefully (``deleting``, removed after ``grace``) when bound and unfinished."""
    if pod.deleting:
        return
    running = pod.node_name and pod.phase in ("Pending", "Running")
    if grace <= 0 or not running:
        remove(tx, pod)
        return
    pod.deleting, pod.start_at, pod.remove_at = True, None, tx.now + grace
    pod_event(tx, "MODIFIED", pod)


def remove(tx: SimTx, pod: PodRecord) -> None:
    """Release a pod's resources, record its DELETED event and drop it."""
    release(tx, pod)
    pod.deleting = True
    pod_event(tx, "DELETED", pod)
    tx.remove_pod(pod)


def stop(tx: SimTx, pod: PodRecord, exit_code: int, reason: str) -> None:
    """End an unfinished pod now with an exit code (0: Succeeded)."""
    pod.start_at = pod.finish_at = None
    end(tx, pod, "Succeeded" if exit_code == 0 else "Failed", exit_code, reason, "", tx.now)


def lose_pods(tx: SimTx, node: str, evict: bool) -> None:
    """A node failed: its unfinished pods are evicted (deleted) or failed, with reason NodeLost."""
    for pod in tx.pods_on_node(node):
        if pod.finished:
            continue
        if evict:
            pod.reason, pod.message = "NodeLost", f"node {node} failed"
            remove(tx, pod)
        else:
            pod.start_at = pod.finish_at = None
            end(tx, pod, "Failed", None, "NodeLost", f"node {node} failed", tx.now)


def new_node(tx: SimTx, info: NodeInfo) -> NodeRecord:
    """A new node (ADDED); :class:`Conflict` if the name is taken."""
    if tx.node(info.name) is not None:
        raise Conflict(f"node {info.name} already exists")
    node = NodeRecord(info.name, info.to_dict(), node_capacity(info))
    node_event(tx, "ADDED", node)
    tx.add_node(node)
    return node


def tick(tx: SimTx) -> int:
    """Fire every pod timer due at or before now, in time order; return how many fired."""
    now = tx.now
    pods = {p.key: p for p in tx.due_pods(now)}
    if not pods:
        return 0
    tx.nodes({p.node_name for p in pods.values() if p.node_name})
    heap: list[tuple[float, int, TimerKind, PodKey]] = []
    seq = 0
    for pod in pods.values():
        for kind in _TIMERS:
            at = pod.timer(kind)
            if at is not None and at <= now:
                seq += 1
                heap.append((at, seq, kind, pod.key))
    heapq.heapify(heap)
    fired = 0
    removed: set[PodKey] = set()
    while heap:
        at, _, kind, key = heapq.heappop(heap)
        pod = pods[key]
        if key in removed or pod.timer(kind) != at:
            continue
        setattr(pod, f"{kind}_at", None)
        fired += 1
        if kind == "start":
            start(tx, pod, at)
            if pod.finish_at is not None and pod.finish_at <= now:
                seq += 1
                heapq.heappush(heap, (pod.finish_at, seq, "finish", key))
        elif kind == "finish":
            finish(tx, pod, at)
        else:
            remove(tx, pod)
            removed.add(key)
    return fired
