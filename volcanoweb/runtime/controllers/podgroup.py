"""The podgroup controller (Volcano's pg-controller): the job's PodGroup (its gang) and groups for bare pods."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scheduler.decode import GROUP_ANNOTATION
from scheduler.quantity import format_quantity
from volcanoweb.clusters.backends.base import BackendError, ClusterBackend
from volcanoweb.jobs.models import Job, Pod, PodGroup, PodGroupPhase, PriorityClass
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.admission import pod_queue_name, tenant_may_use_queue
from volcanoweb.manifests.pods import pod_requests
from volcanoweb.tenancy.models import Namespace

log = logging.getLogger(__name__)
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
COPIED_POD_ANNOTATIONS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
COPIED_POD_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")


def podgroup_name(job: Job) -> str:
    """Return ``<job>-<uid>``."""
    return f"{job.name}-{job.uid}"


def task_min_member(task: dict[str, Any]) -> int:
    """Return a task's minTaskMember: minAvailable, else minPartitions * partitionSize, else replicas."""
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    partition = task.get("partitionPolicy") or {}
    if int(partition.get("minPartitions") or 0) > 0 and int(partition.get("partitionSize") or 0) > 0:
        return int(partition["minPartitions"]) * int(partition["partitionSize"])
    return int(task.get("replicas") or 0)


def _add(total: dict[str, int], amounts: dict[str, int], times: int) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount * times


def min_resources(spec: dict[str, Any], priorities: dict[str, int]) -> dict[str, int]:
    """Return the gang's minResources with Volcano's algorithm (tasks by template priority)."""
    tasks = sorted(
        spec.get("tasks") or [],
        key=lambda t: -priorities.get(((t.get("template") or {}).get("spec") or {}).get("priorityClassName") or "", 0),
    )
    wanted = int(spec.get("minAvailable") or 0)
    task_min = sum(task_min_member(t) for t in tasks)
    total: dict[str, int] = {}
    taken = 0
    if wanted < task_min:
        for task in tasks:
            if taken >= wanted:
                break
            count = min(wanted - taken, int(task.get("replicas") or 0))
            _add(total, pod_requests((task.get("template") or {}).get("spec") or {}), count)
            taken += count
        return total
    for task in tasks:
        if taken >= wanted:
            break
        count = min(task_min_member(task), wanted - taken)
        _add(total, pod_requests((task.get("template") or {}).get("spec") or {}), count)
        taken += count
    for task in tasks:
        if taken >= wanted:
            break
        spare = int(task.get("replicas") or 0) - task_min_member(task)
        if spare <= 0:
            continue
        count = min(spare, wanted - taken)
        _add(total, pod_requests((task.get("template") or {}).get("spec") or {}), count)
        taken += count
    return total


def resources_text(vector: dict[str, int]) -> dict[str, str]:
    """Return scheduler-unit integers as Kubernetes quantity strings."""
    return {name: format_quantity(name, amount) for name, amount in sorted(vector.items()) if amount}


def job_podgroup_fields(job: Job, priority: Callable[[str], int | None] | None = None) -> dict[str, Any]:
    """Return the PodGroup columns derived from a job (minMember, minTaskMember, minResources, queue...).

    ``priority``: a PriorityClass's value by name (the controller's batch reads them once); else a query
    when the job's templates name any.
    """
    spec = job.spec
    names = {((t.get("template") or {}).get("spec") or {}).get("priorityClassName") for t in spec.get("tasks") or []}
    wanted = sorted(n for n in names if n)
    priorities: dict[str, int] = {}
    if wanted and priority is not None:
        priorities = {n: v for n in wanted if (v := priority(n)) is not None}
    elif wanted:
        priorities = dict(PriorityClass.objects.filter(name__in=wanted).values_list("name", "value"))
    resources = resources_text(min_resources(spec, priorities))
    pg_spec: dict[str, Any] = {
        "minMember": int(spec.get("minAvailable") or 0),
        "minTaskMember": {t["name"]: task_min_member(t) for t in spec.get("tasks") or []},
        "queue": job.queue_name,
    }
    if resources:
        pg_spec["minResources"] = resources
    if job.priority_class_name:
        pg_spec["priorityClassName"] = job.priority_class_name
    if spec.get("networkTopology"):
        pg_spec["networkTopology"] = spec["networkTopology"]
    subgroups = [_subgroup_policy(t) for t in spec.get("tasks") or [] if t.get("partitionPolicy")]
    if subgroups:
        pg_spec["subGroupPolicy"] = subgroups
    return {
        "queue_name": job.queue_name,
        "min_member": pg_spec["minMember"],
        "min_task_member": pg_spec["minTaskMember"],
        "min_resources": resources or None,
        "priority_class_name": job.priority_class_name,
        "spec": pg_spec,
        "labels": dict(job.labels),
        "annotations": dict(job.annotations),
    }


def ensure_job_podgroup(
    job: Job, current: PodGroup | None = None, priority: Callable[[str], int | None] | None = None
) -> tuple[PodGroup, bool]:
    """Create the job's PodGroup (phase Pending) or update its derived fields; return (podgroup, created).

    ``current`` is the PodGroup the caller just read: when its derived fields are up to date it is
    returned as it is (no query); otherwise the row is locked and read again. ``priority``: as for
    :func:`job_podgroup_fields`.
    """
    fields = job_podgroup_fields(job, priority)
    if current is not None and all(getattr(current, key) == value for key, value in fields.items()):
        return current, False
    podgroup = PodGroup.objects.select_for_update(no_key=True).filter(job=job).first()
    if podgroup is None:
        owner = render.controller_reference(parse.JOB, job)
        podgroup = PodGroup.objects.create(
            job=job,
            namespace=job.namespace,
            name=podgroup_name(job),
            tenant=job.tenant,
            owner_references=[owner],
            phase=PodGroupPhase.PENDING,
            **fields,
        )
        Pod.objects.filter(job=job).update(podgroup=podgroup)
        return podgroup, True
    changed = [key for key, value in fields.items() if getattr(podgroup, key) != value]
    if changed:
        for key in changed:
            setattr(podgroup, key, fields[key])
        podgroup.resource_version += 1
        podgroup.generation += 1
        podgroup.save(update_fields=[*changed, "resource_version", "generation"])
    return podgroup, False


def _subgroup_policy(task: dict[str, Any]) -> dict[str, Any]:
    """A task's partition policy as its PodGroup's sub-group policy (Volcano's getSubGroupPolicy), its network
    topology (mode, highest tier allowed or named) included."""
    partition = task["partitionPolicy"]
    policy: dict[str, Any] = {
        "name": task["name"],
        "subGroupSize": int(partition.get("partitionSize") or 1),
        "minSubGroups": int(partition.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": task["name"]}},
        "matchLabelKeys": ["volcano.sh/partition-id"],
    }
    topology = partition.get("networkTopology")
    if isinstance(topology, dict) and topology:
        policy["networkTopology"] = {
            k: topology[k] for k in ("mode", "highestTierAllowed", "highestTierName") if k in topology
        }
    return policy


def _bare_pod_queue(pod: Pod) -> str:
    if pod.annotations.get(QUEUE_ANNOTATION):
        return pod_queue_name(pod.annotations, {})
    namespace = Namespace.objects.filter(name=pod.namespace).first()
    return pod_queue_name(pod.annotations, namespace.annotations if namespace is not None else {})


def group_bare_pod(pod: Pod, backend: ClusterBackend | None) -> PodGroup | None:
    """Volcano's pg-controller for one pod: create ``podgroup-<owner or pod uid>`` and annotate the pod.

    A pod whose queue its tenant may not use (one that reached the database without the pod admission,
    e.g. from a real cluster) gets no PodGroup, so it is never scheduled; None is returned.
    """
    owner = next((o for o in pod.owner_references or [] if isinstance(o, dict) and o.get("controller")), None)
    name = f"podgroup-{owner['uid']}" if owner and owner.get("uid") else f"podgroup-{pod.uid}"
    podgroup = PodGroup.objects.filter(namespace=pod.namespace, name=name).first()
    if podgroup is None:
        requests = resources_text(pod.requests or pod_requests(pod.spec))
        annotations = {k: pod.annotations[k] for k in COPIED_POD_ANNOTATIONS if k in pod.annotations}
        labels = {k: pod.labels[k] for k in COPIED_POD_LABELS if k in pod.labels}
        queue = _bare_pod_queue(pod)
        if not tenant_may_use_queue(queue, pod.tenant_id):
            log.warning("pod %s names queue %s, which its tenant may not use: not grouped", pod.key, queue)
            return None
        spec: dict[str, Any] = {"minMember": 1, "queue": queue, "minResources": requests}
        if pod.priority_class_name:
            spec["priorityClassName"] = pod.priority_class_name
        owners = (
            [owner]
            if owner
            else [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": str(pod.uid), "controller": True}]
        )
        podgroup = PodGroup.objects.create(
            namespace=pod.namespace,
            name=name,
            tenant=pod.tenant,
            queue_name=queue,
            min_member=1,
            min_resources=requests or None,
            priority_class_name=pod.priority_class_name,
            spec=spec,
            annotations=annotations,
            labels=labels,
            owner_references=owners,
            phase=PodGroupPhase.PENDING,
        )
    pod.annotations = {**pod.annotations, GROUP_ANNOTATION: name}
    pod.group_name, pod.podgroup = name, podgroup
    pod.resource_version += 1
    pod.save(update_fields=["annotations", "group_name", "podgroup", "resource_version"])
    if backend is not None:
        try:
            backend.patch_pod_annotations(pod.namespace, pod.name, {GROUP_ANNOTATION: name})
        except BackendError as exc:  # not in the cluster yet: whoever creates it copies the row's annotations
            log.info("could not annotate pod %s in the cluster: %s", pod.key, exc)
    return podgroup
