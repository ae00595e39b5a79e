"""A set of decoded objects → the scheduler's Snapshot: each object checked, ordered by creation and
handed to its kind's decoder; the queues and PodGroups Volcano adds itself are added here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from scheduler.decode.annotations import VOLCANO_SCHEDULERS
from scheduler.decode.common import Ctx, parse_timestamp
from scheduler.decode.hypernodes import decode_hyper_node
from scheduler.decode.nodes import decode_node
from scheduler.decode.podgroups import decode_podgroup
from scheduler.decode.pods import decode_pod
from scheduler.decode.policies import decode_pdb, decode_priority_class, decode_resource_quota
from scheduler.decode.queues import decode_queue
from scheduler.model import HyperNode, Job, Node, Queue, Task
from scheduler.policies import PodDisruptionBudget, PriorityClass, ResourceQuota
from scheduler.snapshot import Snapshot

_KINDS = {
    ("v1", "Node"),
    ("v1", "Pod"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "ResourceQuota"),
    ("policy/v1", "PodDisruptionBudget"),
    ("topology.volcano.sh/v1alpha1", "HyperNode"),
}


def _describe(doc: Mapping[str, Any]) -> str:
    kind = doc.get("kind", "?")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = meta.get("name", "?")
    ns = meta.get("namespace")
    if kind in ("Pod", "PodGroup", "ResourceQuota", "PodDisruptionBudget"):
        return f"{kind} {ns or 'default'}/{name}"
    return f"{kind} {name}"


def _creation_ranks(items: list[tuple[int, Mapping[str, Any]]]) -> list[int]:
    """The creation order of each object: by ``metadata.creationTimestamp``, then uid (its
    ``metadata.uid``, else ``namespace/name`` as the parsers default it), as Kubernetes and Volcano
    order; an object without a timestamp comes after every one with one (it is created now), in
    file order."""
    keys: list[tuple[Any, ...]] = []
    for position, (index, doc) in enumerate(items):
        meta = doc.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        stamp = meta.get("creationTimestamp")
        if stamp is None or stamp == "":
            keys.append((1, position))
            continue
        seconds = parse_timestamp(Ctx(index, _describe(doc)), stamp, "metadata.creationTimestamp")
        name = str(meta.get("name", ""))
        default = (
            name
            if doc.get("kind") in ("Queue", "Node", "PriorityClass", "HyperNode")
            else f"{meta.get('namespace') or 'default'}/{name}"
        )
        keys.append((0, seconds, str(meta.get("uid") or default), position))
    ranks = [0] * len(items)
    for rank, position in enumerate(sorted(range(len(items)), key=lambda i: keys[i])):
        ranks[position] = rank
    return ranks


@dataclass
class _Decoded:
    """The model objects decoded so far, by kind, in file order."""

    nodes: list[Node] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    classes: list[PriorityClass] = field(default_factory=list)
    quotas: list[ResourceQuota] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    hyper_nodes: list[HyperNode] = field(default_factory=list)


def snapshot_from_manifests(objects: Iterable[tuple[int, Mapping[str, Any]]]) -> Snapshot:
    """Return the snapshot described by ``objects`` (from :func:`load_manifests`).

    Missing ``default`` and ``root`` queues are added as Volcano does at start-up. A Volcano
    pod without a group annotation gets its own PodGroup ``podgroup-<uid>`` (minMember 1,
    minResources its request), as Volcano's pg-controller does. Pods of other schedulers only
    count toward node usage. Raises :class:`ManifestError`.
    """
    out = _Decoded()
    seen: dict[tuple[str, str], int] = {}
    items = list(objects)
    ranks = _creation_ranks(items)
    for position, (index, doc) in enumerate(items):
        ctx = Ctx(index, _describe(doc))
        kind = _identify(ctx, doc, seen)
        _decode(ctx, kind, doc, ranks[position], out)
    names = {q.name for q in out.queues}
    if "root" not in names:
        out.queues.append(Queue("root", reclaimable=False, creation=-2))
    if "default" not in names:
        out.queues.append(Queue("default", creation=-1))
    return Snapshot.of(
        out.nodes,
        out.queues,
        out.jobs,
        out.tasks,
        out.classes,
        resource_quotas=out.quotas,
        pod_disruption_budgets=out.pdbs,
        hyper_nodes=out.hyper_nodes,
    )


def _identify(ctx: Ctx, doc: Mapping[str, Any], seen: dict[tuple[str, str], int]) -> Any:
    """Return the object's kind once it is a supported kind with a name not seen before (``seen``: the
    document of each kind and name so far, which this adds to)."""
    api, kind = doc.get("apiVersion"), doc.get("kind")
    if (api, kind) not in _KINDS:
        raise ctx.error(
            "kind" if kind not in {k for _, k in _KINDS} else "apiVersion",
            f"unsupported object {api}/{kind}; expected one of " + ", ".join(f"{a} {k}" for a, k in sorted(_KINDS)),
        )
    meta = ctx.mapping(doc.get("metadata"), "metadata")
    if not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise ctx.error("metadata.name", "required")
    ident = (str(kind), ctx.obj)
    if ident in seen:
        raise ctx.error("metadata.name", f"duplicate of document {seen[ident]}")
    seen[ident] = ctx.index
    return kind


def _decode(ctx: Ctx, kind: Any, doc: Mapping[str, Any], order: int, out: _Decoded) -> None:
    """Decode one object of a supported ``kind`` (``order``: its creation rank) into ``out``."""
    if kind == "Node":
        out.nodes.append(decode_node(ctx, doc))
    elif kind == "Pod":
        _add_pod(ctx, doc, order, out)
    elif kind == "PodGroup":
        out.jobs.append(decode_podgroup(ctx, doc, order))
    elif kind == "Queue":
        out.queues.append(decode_queue(ctx, doc, order))
    elif kind == "ResourceQuota":
        out.quotas.append(decode_resource_quota(ctx, doc))
    elif kind == "PodDisruptionBudget":
        out.pdbs.append(decode_pdb(ctx, doc))
    elif kind == "HyperNode":
        out.hyper_nodes.append(decode_hyper_node(ctx, doc))
    else:
        out.classes.append(decode_priority_class(ctx, doc))


def _add_pod(ctx: Ctx, doc: Mapping[str, Any], order: int, out: _Decoded) -> None:
    """Add a pod's task: outside any job when another scheduler's, else in its own PodGroup when it
    names none (as Volcano's pg-controller makes one)."""
    task, scheduler_name, queue = decode_pod(ctx, doc, order)
    if scheduler_name not in VOLCANO_SCHEDULERS:
        task = replace(task, job="")
    elif not task.job:
        pg = f"podgroup-{task.uid.replace('/', '-')}"
        out.jobs.append(
            Job(
                uid=f"{task.namespace}/{pg}",
                name=pg,
                namespace=task.namespace,
                queue=queue or "default",
                min_member=1,
                min_resources=task.requests,
                priority_class_name=task.priority_class_name,
                creation=order,
            )
        )
        task = replace(task, job=f"{task.namespace}/{pg}")
    out.tasks.append(task)
