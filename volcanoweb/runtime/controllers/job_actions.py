"""The job controller's actions on pods: Volcano's syncJob, killJob and killTarget.

``sync`` initiates or refreshes the job (plugins, PodGroup) and, once the PodGroup is past the gate,
creates the missing pods and deletes the surplus ones; the kills delete the job's pods (all, or those of
a task, pod or partition). Each ends by counting the pods into the status and writing it.
"""

from __future__ import annotations

import copy
from typing import Any

from volcanoweb.jobs.models import EventType, Pod, PodGroup, PodGroupPhase
from volcanoweb.runtime import policies as P
from volcanoweb.runtime import state as S
from volcanoweb.runtime.controllers.job_base import ControllerError
from volcanoweb.runtime.controllers.job_pods import JobPods, is_ready
from volcanoweb.runtime.controllers.podgroup import ensure_job_podgroup
from volcanoweb.runtime.podbuild import OUT_OF_SYNC, PARTITION_ID, pod_name

COUNTERS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
PHASE_COUNTER = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded", "Failed": "failed"}
GATED_PG_PHASES = ("", PodGroupPhase.PENDING)


class JobActions(JobPods):
    """Sync and kill a job (Volcano's ``job_controller_actions.go``)."""

    # ------------------------------------------------------------------ sync

    def sync(self, update: S.Update) -> None:
        """Volcano's syncJob: initiate or refresh, then create/delete pods behind the PodGroup gate."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        if not self.queue_exists():
            self.event("JobStatusError", f"queue {job.queue_name} not found", EventType.WARNING)
            return
        status = copy.deepcopy(self.status)
        self._initiate_or_refresh(status)
        podgroup = self._ensure_podgroup()
        self._warn_unscheduled(podgroup)
        status["controlledResources"] = dict(self.ctx.controlled)
        if podgroup.phase in GATED_PG_PHASES:
            update(job.spec, status)
            self.write_status(status)
            return
        counts, task_counts = self._sync_pods(podgroup)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        status["minAvailable"] = int(job.spec.get("minAvailable") or 0)
        update(job.spec, status)
        self.write_status(status)

    def _initiate_or_refresh(self, status: dict[str, Any]) -> None:
        """Volcano's initiateJob (a new or Pending job: its plugins' add) or its plugins' update."""
        if self.phase in ("", S.PENDING):
            if not self.phase:
                S.set_phase(status, S.PENDING)
                status["minAvailable"] = int(self.job.spec.get("minAvailable") or 0)
            for plugin in self.plugins:
                plugin.on_job_add(self.ctx)
        else:
            for plugin in self.plugins:
                plugin.on_job_update(self.ctx)

    def _ensure_podgroup(self) -> PodGroup:
        """The job's PodGroup, created or brought up to date with its spec."""
        if self.podgroup() is None:
            self.writes.flush()  # the new PodGroup is set on the job's pod rows
        podgroup, created = ensure_job_podgroup(self.job, self.podgroup(), self.writes.priority)
        self._podgroup = (podgroup,)
        if created:
            self._pods = None  # their podgroup column was just set
        return podgroup

    def _sync_pods(self, podgroup: PodGroup) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """Create each task's missing pods (once its dependencies are ready), delete the out-of-sync and
        surplus ones; return the pod counts, job-wide and per task."""
        job = self.job
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        existing: dict[str, list[Pod]] = {}
        for current in self.pods():
            existing.setdefault(current.task_name, []).append(current)
        to_delete: list[Pod] = []
        for task in job.spec.get("tasks") or []:
            pods = {p.name: p for p in existing.pop(task["name"], [])}
            missing: list[int] = []
            for index in range(int(task.get("replicas") or 0)):
                pod = pods.pop(pod_name(job.name, task["name"], index), None)
                if pod is None:
                    missing.append(index)
                elif pod.deletion_timestamp is not None:
                    counts["terminating"] += 1
                else:
                    if pod.annotations.get(OUT_OF_SYNC) == "true":
                        to_delete.append(pod)
                    self._count(pod.phase, task["name"], counts, task_counts)
            to_delete.extend(pods.values())  # scale down: indexes ≥ replicas
            if missing and self._dependencies_ready(task):
                for index in missing:
                    new_pod = self.create_pod(task, index, podgroup)
                    self._count(new_pod.phase, task["name"], counts, task_counts)
        for pod in to_delete:
            if self.delete_pod(pod):
                counts["terminating"] += 1
        return counts, task_counts

    def _count(self, phase: str, task: str, counts: dict[str, int], task_counts: dict[str, dict[str, Any]]) -> None:
        counts[PHASE_COUNTER.get(phase, "unknown")] += 1
        phases = task_counts.setdefault(task, {"phase": {}})["phase"]
        key = phase if phase in PHASE_COUNTER else "Unknown"
        phases[key] = phases.get(key, 0) + 1

    def _warn_unscheduled(self, podgroup: PodGroup) -> None:
        conditions = [c for c in (podgroup.status or {}).get("conditions") or [] if isinstance(c, dict)]
        current = [c for c in conditions if c.get("status") == "True"]
        if current and current[-1].get("type") != "Scheduled":
            last = current[-1]
            message = (
                f"PodGroup {podgroup.namespace}:{podgroup.name} {str(last.get('type', '')).lower()}, "
                f"reason: {last.get('message', '')}"
            )
            self.event("PodGroupPending", message, EventType.WARNING)

    def _dependencies_ready(self, task: dict[str, Any]) -> bool:
        depends = task.get("dependsOn") or {}
        names = [n for n in depends.get("name") or [] if n]
        if not names:
            return True
        ready = [self._task_ready(name) for name in names]
        if depends.get("iteration") == "any" and len(names) > 1:
            return any(ready)
        return all(ready)

    def _task_ready(self, name: str) -> bool:
        task = self.task_spec(name)
        if task is None:
            return False
        if task.get("minAvailable") is None:
            return True
        names = [pod_name(self.job.name, name, i) for i in range(int(task.get("replicas") or 0))]
        ready = sum(1 for pod in self.pods() if pod.name in names and is_ready(pod))
        return ready >= int(task["minAvailable"])

    # ------------------------------------------------------------------ kill

    def kill_job(self, *, soft: bool, update: S.Update) -> None:
        """Volcano's killJob: bump the version, delete pods outside the retain set, run plugins' delete, drop the PG."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        status = copy.deepcopy(self.status)
        status["version"] = int(status.get("version") or 0) + 1
        if int(status.get("retryCount") or 0) >= int(job.spec.get("maxRetry") or 3) - 1:
            soft = True  # last retry: keep finished pods for inspection
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        errors = 0
        for pod in self.pods():
            if pod.deletion_timestamp is not None:
                counts["terminating"] += 1
                continue
            if soft and pod.phase in ("Succeeded", "Failed"):  # retained: counted like Volcano's killJob does
                self._count(pod.phase, pod.task_name, counts, task_counts)
                continue
            if self.delete_pod(pod):
                counts["terminating"] += 1
            else:
                errors += 1
                self._count(pod.phase, pod.task_name, counts, task_counts)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        update(job.spec, status)
        for plugin in self.plugins:
            plugin.on_job_delete(self.ctx)
        status["controlledResources"] = dict(self.ctx.controlled)
        self.write_status(status, running_duration=True)
        PodGroup.objects.filter(job=job).delete()
        self._podgroup = (None,)
        if errors:
            raise ControllerError(f"failed to kill {errors} pods")

    def kill_target(self, action: str, request: P.Request, update: S.Update) -> None:
        """KillTarget: delete the pods of the event's task, pod or partition; the PodGroup is kept."""
        job = self.job
        if job.deletion_timestamp is not None:
            return
        pods = self.pods()
        if action == P.RESTART_TASK:
            targets = [p for p in pods if p.task_name == request.task_name]
        elif action == P.RESTART_POD:
            targets = [p for p in pods if p.name == request.pod_name]
        else:
            source = next((p for p in pods if p.name == request.pod_name), None)
            partition = source.labels.get(PARTITION_ID) if source is not None else None
            targets = [
                p
                for p in pods
                if partition is not None
                and p.task_name == request.task_name
                and p.labels.get(PARTITION_ID) == partition
            ]
        status = copy.deepcopy(self.status)
        counts = dict.fromkeys(COUNTERS, 0)
        task_counts: dict[str, dict[str, int]] = {}
        killed = {p.name for p in targets if p.deletion_timestamp is None and self.delete_pod(p)}
        for pod in pods:
            if pod.name in killed or pod.deletion_timestamp is not None:
                counts["terminating"] += 1
            else:
                self._count(pod.phase, pod.task_name, counts, task_counts)
        status.update(counts)
        status["taskStatusCount"] = task_counts
        update(job.spec, status)
        self.write_status(status)
