"""The job controller: the reconcile loop, requests and timers, and the state machine.

Volcano's job controller, with the deviations listed in docs/controllers.md, "Job controller".

One :class:`JobController` works on one Job row locked by the caller (``select_for_update``), inside the
caller's transaction; the database mirror of pods (``jobs.Pod``) plays the role of Volcano's informer
cache and :class:`~volcanoweb.runtime.models.PodRecord` rows remember what the controller saw last. Its
parts: the job's rows and status (``job_base``), event derivation (``job_events``), pods (``job_pods``),
sync and kills (``job_actions``), and the batch's reads and writes (``job_writes``).
"""

from __future__ import annotations

from datetime import timedelta

from volcanoweb.runtime import policies as P
from volcanoweb.runtime import state as S
from volcanoweb.runtime.controllers.job_actions import JobActions
from volcanoweb.runtime.controllers.job_events import JobEvents
from volcanoweb.runtime.models import ArmedAction

MAX_ROUNDS = 6


class JobController(JobActions, JobEvents):
    """Drive one locked job through Volcano's lifecycle."""

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, requests: list[P.Request], *, default_sync: bool) -> list[str]:
        """Process explicit requests plus everything derived from pod/PodGroup changes until quiet."""
        resources = {**self.record.resources, "plugins": sorted(self.job.spec.get("plugins") or {})}
        if resources != self.record.resources:
            self.record.resources = resources
            self.writes.save_record(self.record, ["resources"])
        batch = [*requests, *self.derive()]
        if not batch and default_sync:
            batch = [P.Request(event=P.OUT_OF_SYNC)]
        for _ in range(MAX_ROUNDS):
            if not batch:
                break
            before = self.phase
            self.process(batch)
            batch = self.derive()
            if self.phase != before:  # a phase change is a Job update: Volcano requeues the job (OutOfSync)
                batch.append(P.Request(event=P.OUT_OF_SYNC))
        return self.executed

    # ------------------------------------------------------------------ requests and timers

    def process(self, requests: list[P.Request]) -> None:
        """Resolve and execute requests in order; consecutive plain syncs run once."""
        sync_due = False
        for request in requests:
            version = int(self.status.get("version") or 0)
            action, delay, why = P.explain(self.job.spec, version, str(self.job.uid), request)
            if delay > 0:
                self._arm(action, request, delay, why)
                continue
            if action == P.SYNC_JOB:
                sync_due = True
                continue
            if sync_due and P.scope_of(action) != "job":
                self.execute(P.SYNC_JOB, P.Request())
                sync_due = False
            # A job-wide action (RestartJob, AbortJob, ...) goes first: a sync of the batch's final
            # pod counts must not finish the job (e.g. Failed) before the policy that reacts to them.
            self.run_action(action, request, why)
        if sync_due:
            self.execute(P.SYNC_JOB, P.Request())

    def run_action(self, action: str, request: P.Request, why: str = "") -> None:
        """Execute a (non-sync) action now, with its event (what fired it and on which pod), then cancel armed
        actions of its scope."""
        self.writes.flush()
        self.event("ExecuteAction", f"Start to execute action {action} {_fired_by(why, request)}".rstrip())
        self.execute(action, request)
        self.executed.append(action)
        armed = ArmedAction.objects.filter(job_record=self.record)
        scope = P.scope_of(action)
        if scope == "job":
            armed.filter(action__in=P.JOB_SCOPE_ACTIONS).delete()
        elif scope == "task":
            armed.filter(action=action, task_name=request.task_name).delete()
        elif scope in ("pod", "partition"):
            armed.filter(action=action, pod_name=request.pod_name).delete()

    def _arm(self, action: str, request: P.Request, delay: float, why: str = "") -> None:
        self.writes.flush()  # the pod's uid is the cluster's from here on
        self._has_armed = True
        armed = ArmedAction.objects.filter(job_record=self.record, action=action, pod_name=request.pod_name)
        if armed.exists():
            return
        ArmedAction.objects.create(
            job_record=self.record,
            action=action,
            event=request.event,
            task_name=request.task_name,
            pod_name=request.pod_name,
            pod_uid=self.writes.uid(request.pod_uid),
            fire_at=self.now + timedelta(seconds=delay),
        )
        fired = _fired_by(why, request)
        self.event("ExecuteAction", f"Execute action {action} after {timedelta(seconds=delay)} {fired}".rstrip())

    def due_actions(self) -> list[P.Request]:
        """Pop the armed actions whose time has come, as requests."""
        if self._new_record:
            return []  # nothing can be armed on a record created just now
        if self._armed_due is not None:
            due, self._armed_due = self._armed_due, None
        else:
            due = list(ArmedAction.objects.filter(job_record=self.record, fire_at__lte=self.now))
        for item in due:
            item.delete()
        return [
            P.Request(event=a.event, action=a.action, task_name=a.task_name, pod_name=a.pod_name, pod_uid=a.pod_uid)
            for a in due
        ]

    # ------------------------------------------------------------------ state machine

    def execute(self, action: str, request: P.Request) -> None:
        """Run ``action`` with the handler of the job's current phase (Volcano's transition table)."""
        phase = self.phase
        if phase in ("", S.PENDING, S.RUNNING):
            self._execute_pending_or_running(phase, action, request)
        elif phase == S.RESTARTING:
            if action == P.SYNC_JOB:
                self.sync(S.restarting_sync)
            elif action in P.TARGET_ACTIONS:
                self.kill_target(action, request, S.restarting_sync)
            else:
                self.kill_job(soft=False, update=S.restarting_sync)
        elif phase in (S.ABORTING, S.ABORTED):
            if action == P.RESUME_JOB:
                self.kill_job(soft=True, update=S.move_to(S.RESTARTING, retry=True))
            else:
                self.kill_job(soft=True, update=S.settle_to(S.ABORTED) if phase == S.ABORTING else S.unchanged)
        elif phase == S.COMPLETING:
            self.kill_job(soft=True, update=S.settle_to(S.COMPLETED))
        elif phase == S.TERMINATING:
            self.kill_job(soft=True, update=S.settle_to(S.TERMINATED))
        else:  # Completed, Failed, Terminated
            self.kill_job(soft=True, update=S.unchanged)

    def _execute_pending_or_running(self, phase: str, action: str, request: P.Request) -> None:
        """The Pending and Running handlers (also a job without a phase yet): a policy's action, else a sync."""
        restarting = S.move_to(S.RESTARTING, retry=True)
        if action == P.RESTART_JOB:
            self.kill_job(soft=False, update=restarting)
        elif action in P.TARGET_ACTIONS:
            self.kill_target(action, request, restarting)
        elif action == P.ABORT_JOB:
            self.kill_job(soft=True, update=S.move_to(S.ABORTING))
        elif action == P.COMPLETE_JOB:
            self.kill_job(soft=True, update=S.move_to(S.COMPLETING))
        elif action == P.TERMINATE_JOB:
            self.kill_job(soft=True, update=S.move_to(S.TERMINATING))
        else:
            self.sync(S.running_sync if phase == S.RUNNING else S.pending_sync)


def _fired_by(why: str, request: P.Request) -> str:
    """``(job policy (event PodFailed) on pod j-worker-0)``, or "" when nothing but a plain sync fired it."""
    if not why:
        return ""
    on = (
        f" on pod {request.pod_name}"
        if request.pod_name
        else (f" on task {request.task_name}" if request.task_name else "")
    )
    return f"({why}{on})"
