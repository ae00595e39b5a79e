"""CronJobs, JobTemplates and JobFlows: stored and validated here, driven by controllers elsewhere."""

from __future__ import annotations

from django.db import models

from volcanoweb.tenancy.models import NamespacedObject


class ConcurrencyPolicy(models.TextChoices):
    """CronJob concurrency policies."""

    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


class JobFlowPhase(models.TextChoices):
    """JobFlow phases (status.state.phase)."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEED = "Succeed"
    FAILED = "Failed"
    TERMINATING = "Terminating"


class CronJob(NamespacedObject):
    """A ``batch.volcano.sh/v1alpha1`` CronJob; ``status`` (active, lastScheduleTime...) is the controller's."""

    schedule = models.CharField(max_length=200)
    time_zone = models.CharField(max_length=100, null=True, blank=True)
    suspend = models.BooleanField(default=False)
    concurrency_policy = models.CharField(
        max_length=10, choices=ConcurrencyPolicy.choices, default=ConcurrencyPolicy.ALLOW
    )
    starting_deadline_seconds = models.PositiveBigIntegerField(null=True, blank=True)
    successful_jobs_history_limit = models.PositiveIntegerField(default=3)
    failed_jobs_history_limit = models.PositiveIntegerField(default=1)
    last_schedule_time = models.DateTimeField(null=True, blank=True)
    last_successful_time = models.DateTimeField(null=True, blank=True)
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="workflows_cronjob_ns_name")]


class JobTemplate(NamespacedObject):
    """A ``flow.volcano.sh/v1alpha1`` JobTemplate: ``spec`` is a plain Job spec."""

    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="workflows_jobtemplate_ns_name")]


class JobFlow(NamespacedObject):
    """A ``flow.volcano.sh/v1alpha1`` JobFlow: a DAG of JobTemplates run as Jobs."""

    phase = models.CharField(max_length=12, choices=JobFlowPhase.choices, default=JobFlowPhase.PENDING, db_index=True)
    job_retain_policy = models.CharField(max_length=10, blank=True, default="")
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="workflows_jobflow_ns_name")]
