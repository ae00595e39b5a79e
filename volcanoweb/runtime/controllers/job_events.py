"""The job controller's event derivation: what changed since its last look, as requests.

The controller compares the PodGroup phase and the pods with what it recorded last
(:class:`~volcanoweb.runtime.models.PodRecord`) and turns each difference into the event Volcano's
informer handlers would send (PodPending, PodRunning, PodFailed, PodEvicted, TaskCompleted, TaskFailed,
OutOfSync); an event cancels the armed actions it makes moot.
"""

from __future__ import annotations

from typing import Any

from volcanoweb.jobs.models import EventType, Pod, PodGroupPhase
from volcanoweb.runtime import policies as P
from volcanoweb.runtime.controllers.job_base import JobBase
from volcanoweb.runtime.controllers.job_pods import exit_text, pod_version, restart_count
from volcanoweb.runtime.models import ArmedAction, PodRecord
from volcanoweb.runtime.podbuild import OUT_OF_SYNC


class JobEvents(JobBase):
    """Derive requests from pod and PodGroup changes (Volcano's ``job_controller_handler.go``)."""

    def derive(self) -> list[P.Request]:
        """Return requests for what changed since the last look: PodGroup phase, pods added/changed/gone."""
        requests: list[P.Request] = []
        podgroup = self.podgroup()
        pg_phase = podgroup.phase if podgroup is not None else ""
        if pg_phase != self.record.podgroup_phase:
            self.record.podgroup_phase = pg_phase
            self.writes.save_record(self.record, ["podgroup_phase"])
            if pg_phase:
                requests.append(P.Request(event=P.UNKNOWN if pg_phase == PodGroupPhase.UNKNOWN else ""))
        records = self.pod_records()
        pods = self.pods()
        by_task: dict[str, list[Pod]] = {}
        for pod in pods:
            by_task.setdefault(pod.task_name, []).append(pod)
        for pod in pods:
            rec = records.pop(pod.name, None)
            if rec is not None and rec.pod_uid != str(pod.uid):
                requests.append(self._gone(rec))
                rec = None
            request = self._observe(pod, rec, by_task)
            if request is not None:
                requests.append(request)
                self._cancel_on_event(request)
        for rec in records.values():
            request = self._gone(rec)
            requests.append(request)
            self._cancel_on_event(request)
        # Pods the cluster deleted (evicted by reclaim or preempt, lost with their node, or killed by us)
        # were observed above in their last phase; now they are gone, as in Volcano's deletePod handler.
        for pod in pods:
            if not (pod.status or {}).get("deleted"):
                continue
            self.writes.flush()  # the records observed above are rows before they are deleted
            gone = self.pod_records().get(pod.name)
            self._forget_pod(pod)
            pod.delete()
            if gone is not None:
                if not gone.out_of_sync:  # not deleted by this controller: record the eviction and its cause
                    self._record_eviction(pod)
                request = self._gone(gone)
                requests.append(request)
                self._cancel_on_event(request)
        return requests

    def _record_eviction(self, pod: Pod) -> None:
        """A Warning event on the job naming the evicted pod, its node and the cluster's reason (kept with the job)."""
        status = pod.status or {}
        reason = str(status.get("reason") or "Evicted")
        message = str(status.get("message") or "")
        where = f" from node {pod.node_name}" if pod.node_name else ""
        cause = f"{reason}: {message}" if message else reason
        self.event("PodEvicted", f"pod {pod.name} was evicted{where} ({cause})", EventType.WARNING)

    def _gone(self, rec: PodRecord) -> P.Request:
        self.writes.flush()
        event = P.OUT_OF_SYNC if rec.out_of_sync else P.POD_EVICTED
        if self._records is not None and rec.name in self._records and self._records[rec.name].pk == rec.pk:
            del self._records[rec.name]
        rec.delete()
        return P.Request(
            event=event,
            task_name=rec.task_name,
            pod_name=rec.name,
            pod_uid=rec.pod_uid,
            job_version=rec.version,
            job_uid=str(self.job.uid),
        )

    def _observe(self, pod: Pod, rec: PodRecord | None, by_task: dict[str, list[Pod]]) -> P.Request | None:
        restarts = restart_count(pod)
        base: dict[str, Any] = {
            "task_name": pod.task_name,
            "pod_name": pod.name,
            "pod_uid": str(pod.uid),
            "job_version": pod_version(pod),
            "job_uid": str(self.job.uid),
        }
        out_of_sync = pod.annotations.get(OUT_OF_SYNC) == "true"
        if rec is None:
            rec = PodRecord(
                job_record=self.record,
                name=pod.name,
                pod_uid=str(pod.uid),
                task_name=pod.task_name,
                version=base["job_version"],
                phase=pod.phase,
                restarts=restarts,
                out_of_sync=out_of_sync,
            )
            self.writes.new_pod_record(rec)
            if self._records is not None:
                self._records[rec.name] = rec
            if out_of_sync:
                return P.Request(event=P.OUT_OF_SYNC, **base)
            if pod.phase == "Pending":
                return P.Request(event=P.POD_PENDING, **base)
            return self._transition("Pending", pod, by_task, base)
        if rec.phase == pod.phase and rec.restarts == restarts:
            return None
        old_phase, old_restarts = rec.phase, rec.restarts
        rec.phase, rec.restarts = pod.phase, restarts
        self.writes.save_pod_record(rec)
        if old_phase == pod.phase:
            if restarts > old_restarts:
                self.event(
                    "PodRestarted",
                    f"pod {pod.name} of task {pod.task_name} restarted: {exit_text(pod, last=True)}",
                    EventType.WARNING,
                )
            if restarts != old_restarts and self._task_restarts_exhausted(pod.task_name, by_task):
                return P.Request(event=P.TASK_FAILED, **base)
            return P.Request(event=P.OUT_OF_SYNC, **base)
        return self._transition(old_phase, pod, by_task, base)

    def _transition(self, old: str, pod: Pod, by_task: dict[str, list[Pod]], base: dict[str, Any]) -> P.Request:
        if pod.annotations.get(OUT_OF_SYNC) == "true":
            return P.Request(event=P.OUT_OF_SYNC, **base)
        if pod.phase == "Failed":
            self.event("PodFailed", f"pod {pod.name} of task {pod.task_name} {exit_text(pod)}", EventType.WARNING)
            return P.Request(event=P.POD_FAILED, exit_code=int(pod.exit_code or 0), **base)
        if pod.phase == "Succeeded":
            task = self.task_spec(pod.task_name) or {}
            done = sum(1 for p in by_task.get(pod.task_name, []) if p.phase == "Succeeded")
            event = P.TASK_COMPLETED if task and done == int(task.get("replicas") or 0) else P.OUT_OF_SYNC
            return P.Request(event=event, **base)
        if pod.phase in ("Running", "Pending"):
            event = P.POD_RUNNING if pod.phase == "Running" else P.POD_PENDING
            if old == pod.phase and self._task_restarts_exhausted(pod.task_name, by_task):
                event = P.TASK_FAILED
            return P.Request(event=event, **base)
        return P.Request(event=P.OUT_OF_SYNC, **base)

    def _task_restarts_exhausted(self, task_name: str, by_task: dict[str, list[Pod]]) -> bool:
        task = self.task_spec(task_name) or {}
        budget = int(task.get("maxRetry") or 3)
        if budget < 0:
            return False
        live = [p for p in by_task.get(task_name, []) if p.phase in ("Running", "Pending")]
        return sum(restart_count(p) for p in live) >= budget

    def _cancel_on_event(self, request: P.Request) -> None:
        if not request.pod_name or not self._has_armed:
            return
        armed = ArmedAction.objects.filter(job_record=self.record, pod_name=request.pod_name)
        if request.event != P.POD_PENDING:
            armed.filter(event=P.POD_PENDING, pod_uid=self.writes.uid(request.pod_uid)).delete()
        if request.event == P.POD_RUNNING:
            armed.filter(event__in=(P.POD_FAILED, P.POD_EVICTED)).delete()
