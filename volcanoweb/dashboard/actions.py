"""Which job commands a job's phase accepts, and what each one does, in words a user can confirm.

The table follows the job controller's state machine (``runtime/controllers/job.py``, Volcano's
``pkg/controllers/job/state``): Pending and Running accept AbortJob (suspend) and RestartJob; Aborting
and Aborted accept ResumeJob, which restarts the job and counts one retry (as Volcano does); every other
phase ignores commands (the controller only re-kills the job), so the dashboard does not offer them and
says why. Delete is always possible. A command still waiting for the controller blocks new ones, so a
second click cannot queue a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass

from volcanoweb.jobs.models import Command, Job, JobPhase

#: Dashboard verbs to Volcano command actions ("delete" is a delete, not a command).
ACTIONS = {"suspend": "AbortJob", "resume": "ResumeJob", "restart": "RestartJob", "delete": None, "rerun": None}
LABELS = {"suspend": "Suspend", "resume": "Resume", "restart": "Restart", "delete": "Delete", "rerun": "Run again"}

ACTIVE = (JobPhase.PENDING, JobPhase.RUNNING)
SUSPENDED = (JobPhase.ABORTING, JobPhase.ABORTED)
FINISHED = (JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED)


@dataclass(frozen=True)
class JobAction:
    """One button: whether the job's phase accepts it, why not, and the confirmation text."""

    verb: str
    label: str
    available: bool
    reason: str = ""
    confirm: str = ""
    danger: bool = False


def _pods_text(count: int) -> str:
    return f"{count} pod{'s' if count != 1 else ''}"


def live_pods(job: Job) -> int:
    """Pods the controller would kill: pending, running or still terminating (from the job's status)."""
    status = job.status or {}
    return sum(int(status.get(key) or 0) for key in ("pending", "running", "terminating", "unknown"))


def retries_left_after(job: Job) -> int:
    """Retries left once one more is used (Volcano fails the job when ``retryCount`` reaches ``maxRetry``)."""
    used = int((job.status or {}).get("retryCount") or 0)
    return job.max_retry - used - 1


def retry_text(job: Job) -> str:
    """``uses 1 retry: 2 of 3 left`` (what a Resume or a Restart costs)."""
    return f"uses 1 retry: {max(retries_left_after(job), 0)} of {job.max_retry} left"


def waiting_command(job: Job) -> Command | None:
    """The oldest command on this job the controller has not consumed yet."""
    return job.commands.filter(consumed_at__isnull=True).order_by("created_at").first()


def _not_accepted(verb: str, phase: str) -> str:
    if verb == "resume":
        if phase in ACTIVE:
            return f"The job is {phase}, not suspended: there is nothing to resume."
        if phase == JobPhase.FAILED:
            return "A Failed job cannot be resumed (Volcano ignores the command): use Run again."
        return f"A {phase} job cannot be resumed; only Aborted (suspended) jobs can."
    if phase in SUSPENDED:
        return f"The job is already {phase}." if verb == "suspend" else "Resume the job to restart it."
    if phase in FINISHED:
        return f"The job has finished ({phase}); the controller ignores commands now."
    return f"The job is {phase}; the controller ignores this command until that ends."


def job_actions(job: Job, waiting: Command | None = None) -> list[JobAction]:
    """The dashboard actions for ``job`` in its current phase, each available or with the reason: Run again (only
    on a finished job), Suspend, Resume, Restart and Delete."""
    phase = job.phase
    pods = live_pods(job)
    out: list[JobAction] = []
    if phase in FINISHED:
        confirm = (
            f"Run {job.key} again? A new job is created from the same spec, named after the first of its runs with "
            f"the next free number (-2, -3, ...); {job.key} stays as it is ({phase})."
        )
        out.append(JobAction("rerun", LABELS["rerun"], True, "", confirm))
    accepted = {
        "suspend": phase in ACTIVE,
        "restart": phase in ACTIVE,
        "resume": phase in SUSPENDED,
    }
    left = retries_left_after(job)
    for verb in ("suspend", "resume", "restart"):
        reason = ""
        if waiting is not None:
            reason = f"A {waiting.action} command is waiting for the job controller; wait until it is done."
        elif not accepted[verb]:
            reason = _not_accepted(verb, phase)
        elif verb in ("resume", "restart") and left <= 0:
            reason = (
                f"No retries left (maxRetry {job.max_retry}): the retry count would reach maxRetry "
                "and Volcano would mark the job Failed instead of restarting it."
            )
        confirm = ""
        if verb == "suspend":
            confirm = (
                f"Suspend {job.key}? Volcano aborts it: {_pods_text(pods)} still pending or running are killed; "
                "finished pods are kept. Resuming it later restarts it and uses 1 retry."
            )
        elif verb == "resume":
            confirm = (
                f"Resume {job.key}? Volcano restarts it from the beginning (new pods, the PodGroup is created again); "
                f"this {retry_text(job)}."
            )
        elif verb == "restart":
            confirm = (
                f"Restart {job.key}? All of its {_pods_text(pods)} are killed and recreated; this {retry_text(job)}."
            )
        out.append(JobAction(verb, LABELS[verb], not reason, reason, confirm, danger=verb != "resume"))
    delete = (
        f"Delete {job.key}? {_pods_text(pods).capitalize()} still pending or running are killed and the job, "
        "its tasks, pods and PodGroup are removed. This cannot be undone."
    )
    out.append(JobAction("delete", LABELS["delete"], True, "", delete, danger=True))
    return out


def unavailable_reason(job: Job, verb: str) -> str:
    """Why ``verb`` is refused for ``job`` now (empty when it is accepted)."""
    for action in job_actions(job, waiting_command(job)):
        if action.verb == verb:
            return action.reason
    if verb == "rerun":
        return f"The job is {job.phase}: only a finished job (Completed, Failed or Terminated) can be run again."
    return f"Unknown action {verb!r}."


def result_message(job: Job, verb: str) -> str:
    """The flash after an action was accepted: what happens next, and how to undo where one can."""
    pods = _pods_text(live_pods(job))
    if verb == "suspend":
        return (
            f"Suspend requested for {job.key}: the job controller aborts it and kills {pods} next. "
            "To undo, Resume it once it is Aborted (uses 1 retry)."
        )
    if verb == "resume":
        return f"Resume requested for {job.key}: the job controller restarts it next ({retry_text(job)})."
    if verb == "restart":
        return f"Restart requested for {job.key}: the job controller kills {pods} and recreates them next."
    return f"Deleted {job.key}."
