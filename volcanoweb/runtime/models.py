"""Controller bookkeeping: what the job controller last observed (its informer cache) and its armed timers.

These rows are keyed by plain ids and uids rather than foreign keys so that they outlive a deleted Job:
the clean-up of a deleted job's pods and plugin objects needs to know what existed.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class JobRecord(models.Model):
    """What the job controller knows about one Job (survives the Job row, for clean-up)."""

    job_id = models.BigIntegerField(unique=True)
    job_uid = models.UUIDField(db_index=True)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    podgroup_phase = models.CharField(max_length=10, blank=True, default="", help_text="last PodGroup phase seen")
    resources = models.JSONField(
        default=dict, blank=True, help_text='what clean-up needs, e.g. {"plugins": ["ssh", "svc"]}'
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["namespace", "name"]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodRecord(models.Model):
    """The last state of one job pod the controller has seen (to derive PodFailed, PodEvicted, ...)."""

    job_record = models.ForeignKey(JobRecord, on_delete=models.CASCADE, related_name="pods")
    name = models.CharField(max_length=253)
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    task_name = models.CharField(max_length=63, blank=True, default="")
    version = models.IntegerField(default=0, help_text="volcano.sh/job-version of the pod")
    phase = models.CharField(max_length=10, blank=True, default="")
    restarts = models.IntegerField(default=0, help_text="Σ container restart counts last seen")
    out_of_sync = models.BooleanField(default=False, help_text="deleted by the controller itself")

    class Meta:
        ordering = ["job_record", "name"]
        constraints = [models.UniqueConstraint(fields=["job_record", "name"], name="runtime_podrecord_job_name")]

    def __str__(self) -> str:
        return self.name


class ArmedAction(models.Model):
    """A policy action with a ``timeout``, waiting to fire (Volcano's delayed actions)."""

    job_record = models.ForeignKey(JobRecord, on_delete=models.CASCADE, related_name="armed")
    action = models.CharField(max_length=20)
    event = models.CharField(max_length=20)
    task_name = models.CharField(max_length=63, blank=True, default="")
    pod_name = models.CharField(max_length=253, blank=True, default="")
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    fire_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["fire_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} after {self.event} ({self.pod_name})"
