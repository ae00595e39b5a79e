"""One cycle as the scheduling tests drive it: the cycle, the cluster mirrored, the job controller run."""

from __future__ import annotations

from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Job
from volcanoweb.runtime import services as runtime
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle


def cycle_and_sync(now: float | None = None) -> None:
    """One scheduling cycle, then the cluster mirrored and the job controller run (an admitted gang gets its
    pods; the tests' transactions never commit, so no worker is woken)."""
    run = run_cycle(now=now)
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    cluster_services.sync_from_backend()
    for job_id in Job.objects.values_list("pk", flat=True):
        runtime.sync_job(job_id)
    cluster_services.sync_from_backend()
