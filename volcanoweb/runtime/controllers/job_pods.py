"""The job controller's pods: reading a pod's restarts, version and readiness; creating, mirroring, deleting pods.

A created pod is mirrored as its ``jobs.Pod`` row at once (the row the scheduler and the pages read), or,
in a deferred batch, built here and inserted by :meth:`~volcanoweb.runtime.controllers.job_writes.Writes.flush`
with the cluster's uid.
"""

from __future__ import annotations

import uuid
from typing import Any

from volcanoweb.clusters.backends.base import BackendError, Conflict, NotFound, PodInfo
from volcanoweb.jobs.models import EventType, Pod, PodGroup
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.pods import pod_requests
from volcanoweb.runtime.controllers.job_base import ControllerError, JobBase
from volcanoweb.runtime.controllers.job_writes import PodCreation
from volcanoweb.runtime.models import PodRecord
from volcanoweb.runtime.podbuild import JOB_VERSION, OUT_OF_SYNC, build_pod, to_backend_spec


def restart_count(pod: Pod) -> int:
    """Return Σ restartCount over the pod's container and init-container statuses (0 when unknown)."""
    status = pod.status or {}
    total = 0
    for key in ("containerStatuses", "initContainerStatuses"):
        for item in status.get(key) or []:
            if isinstance(item, dict):
                total += int(item.get("restartCount") or 0)
    return total + int(status.get("restartCount") or 0)


def pod_version(pod: Pod) -> int:
    """Return the pod's ``volcano.sh/job-version`` annotation."""
    try:
        return int(pod.annotations.get(JOB_VERSION, 0))
    except (TypeError, ValueError):
        return 0


def is_ready(pod: Pod) -> bool:
    """Return True for a Succeeded pod, or a Running one whose containers are all ready (unknown ⇒ ready)."""
    if pod.phase == "Succeeded":
        return True
    if pod.phase != "Running" or pod.deletion_timestamp is not None:
        return False
    statuses = [s for s in (pod.status or {}).get("containerStatuses") or [] if isinstance(s, dict)]
    return all(s.get("ready", True) for s in statuses)


def exit_text(pod: Pod, *, last: bool = False) -> str:
    """``exited with code 1 (Error), 2 restarts``: the pod's (or, with ``last``, its containers' last) exit."""
    status = pod.status or {}
    code: Any = pod.exit_code
    reason = str(status.get("reason") or "")
    for item in status.get("containerStatuses") or []:
        if not isinstance(item, dict):
            continue
        state = (item.get("lastState") if last else item.get("state")) or {}
        terminated = state.get("terminated") if isinstance(state, dict) else None
        if isinstance(terminated, dict):
            code = terminated.get("exitCode", code)
            reason = str(terminated.get("reason") or reason)
            break
    restarts = restart_count(pod)
    exited = f"exited with code {code}" if code is not None else "ended"
    return f"{exited}{f' ({reason})' if reason else ''}, {restarts} restart{'s' if restarts != 1 else ''}"


class JobPods(JobBase):
    """Create and delete the job's pods, keeping their rows and the controller's records in step."""

    def create_pod(self, task: dict[str, Any], index: int, podgroup: PodGroup) -> Pod:
        """Build a task pod, create it in the cluster (adopting one that exists) and mirror it as a row."""
        job = self.job
        built = build_pod(job, task, index, podgroup.name, self.plugins, self.ctx)
        spec = to_backend_spec(job, built, self.ctx.config_maps)
        if self.writes.deferred_pods:  # created in the cluster by the batch's flush, with the others
            predicted = str(uuid.uuid4())
            fresh = PodInfo(namespace=spec.namespace, name=spec.name, uid=predicted)
            pod = self._mirror_created(task, index, built, fresh, podgroup, insert=False)
            self.writes.creations.append(PodCreation(pod, spec, predicted))
            return pod
        try:
            info = self.backend.create_pod(spec)
        except Conflict:
            info = self.backend.get_pod(job.namespace, spec.name)
        except BackendError as exc:
            self.event("FailedCreate", f"Error creating pods: [{exc}]", EventType.WARNING)
            raise ControllerError(str(exc)) from exc
        return self._mirror_created(task, index, built, info, podgroup)

    def _mirror_created(
        self,
        task: dict[str, Any],
        index: int,
        built: dict[str, Any],
        info: PodInfo,
        podgroup: PodGroup,
        *,
        insert: bool = True,
    ) -> Pod:
        """The pod's row (``insert=False``: built only, the batch's flush inserts it)."""
        job, meta = self.job, built["metadata"]
        fields = self._pod_row_fields(task, index, built, info, podgroup)
        if not insert:
            built_row = Pod(namespace=job.namespace, name=meta["name"], uid=info.uid, **fields)
            self._remember_pod(built_row)
            return built_row
        pod = Pod.objects.filter(namespace=job.namespace, name=meta["name"]).first()
        if pod is None:
            pod = Pod(namespace=job.namespace, name=meta["name"], **fields)
            if info.uid:
                pod.uid = info.uid
            pod.save(force_insert=True)
            self._remember_pod(pod)
            return pod
        for key, value in fields.items():
            setattr(pod, key, value)
        pod.resource_version += 1
        pod.save(update_fields=[*fields, "resource_version"])
        self._remember_pod(pod)
        return pod

    def _pod_row_fields(
        self, task: dict[str, Any], index: int, built: dict[str, Any], info: PodInfo, podgroup: PodGroup
    ) -> dict[str, Any]:
        """The columns of a created pod's row: the built manifest's, with what the cluster answered."""
        job, meta, spec = self.job, built["metadata"], built["spec"]
        priority_class = spec.get("priorityClassName") or ""
        priority = None
        if priority_class:
            priority = self.writes.priority(priority_class)
        owner = render.controller_reference(parse.JOB, job)
        fields: dict[str, Any] = {
            "tenant_id": job.tenant_id,
            "job": job,
            "podgroup": podgroup,
            "group_name": podgroup.name,
            "task_name": task["name"],
            "index": index,
            "labels": meta["labels"],
            "annotations": {**meta["annotations"], **info.annotations},
            "phase": info.phase or "Pending",
            "node_name": info.node_name,
            "exit_code": info.exit_code,
            "scheduler_name": spec["schedulerName"],
            "priority_class_name": priority_class,
            "priority": priority,
            "requests": pod_requests(spec),
            "spec": spec,
            "owner_references": [owner],
            "deletion_timestamp": None,
        }
        return fields

    def delete_pod(self, pod: Pod) -> bool:
        """Delete a pod as the controller does: mark it out of sync first, so its removal is no PodEvicted."""
        self.writes.flush()
        self._records = None
        PodRecord.objects.update_or_create(
            job_record=self.record,
            name=pod.name,
            defaults={
                "pod_uid": str(pod.uid),
                "task_name": pod.task_name,
                "version": pod_version(pod),
                "phase": pod.phase,
                "out_of_sync": True,
            },
        )
        try:
            self.backend.delete_pod(pod.namespace, pod.name)
        except BackendError as exc:
            self.event("FailedDelete", f"Error deleting pods: [{exc}]", EventType.WARNING)
            return False
        try:
            self.backend.get_pod(pod.namespace, pod.name)
        except NotFound:
            self._forget_pod(pod)
            pod.delete()
            return True
        except BackendError:
            pass
        pod.annotations = {**pod.annotations, OUT_OF_SYNC: "true"}
        pod.deletion_timestamp = pod.deletion_timestamp or self.now
        pod.resource_version += 1
        pod.save(update_fields=["annotations", "deletion_timestamp", "resource_version"])
        return True
