"""Scheduler configuration, kept as versioned YAML."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SchedulerProfile(models.Model):
    """One version of the scheduler configuration (Volcano's YAML); exactly one version is active.

    ``yaml`` is stored as submitted and validated with ``scheduler.config.parse_config`` first.
    """

    version = models.PositiveIntegerField(unique=True)
    yaml = models.TextField()
    active = models.BooleanField(default=False)
    comment = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    resource_version = models.BigIntegerField(
        default=0, help_text="the last revision of the change log that changed this row (stamped by the database)"
    )

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["active"], condition=models.Q(active=True), name="scheduling_one_active")
        ]

    def __str__(self) -> str:
        return f"v{self.version}{' (active)' if self.active else ''}"


class RunStatus(models.TextChoices):
    """Outcome of one scheduling cycle."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class SchedulerLease(models.Model):
    """The cycle claim: one row per scheduler (``name``), taken with a conditional UPDATE.

    A worker may run a cycle only after changing this row from "expired" to "held by me until
    ``expires_at``" in one UPDATE (exactly one row changed). ``token`` grows with every claim; the
    apply transaction re-checks it under a row lock (a fencing token), so a worker whose lease
    expired mid-cycle cannot apply a stale result.
    """

    name = models.CharField(max_length=63, unique=True, default="volcano")
    holder = models.CharField(max_length=200, blank=True, default="")
    token = models.BigIntegerField(default=0)
    expires_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder or '-'} until {self.expires_at:%H:%M:%S}"


class SchedulingRun(models.Model):
    """One scheduling cycle: timings per action, counts, decisions and reasons (like NetBox's Job rows).

    ``unschedulable`` maps PodGroup ``ns/name`` → the core's structured reason (kind, message, plugin,
    fit_errors, numbers). ``decisions`` keeps binds / evictions / pipelined pods (capped for size).
    """

    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True, db_index=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.RUNNING, db_index=True)
    holder = models.CharField(max_length=200, blank=True, default="")
    token = models.BigIntegerField(default=0)
    config_version = models.PositiveIntegerField(default=0, help_text="active SchedulerProfile version (0: built-in)")
    duration_ms = models.FloatField(default=0.0)
    snapshot_ms = models.FloatField(default=0.0)
    core_ms = models.FloatField(default=0.0)
    apply_ms = models.FloatField(default=0.0)
    bind_ms = models.FloatField(default=0.0)
    record_ms = models.FloatField(default=0.0, help_text="the insights recording after the apply (observation)")
    action_ms = models.JSONField(default=dict, blank=True)
    nodes = models.PositiveIntegerField(default=0)
    jobs = models.PositiveIntegerField(default=0)
    tasks = models.PositiveIntegerField(default=0)
    binds = models.PositiveIntegerField(default=0)
    evictions = models.PositiveIntegerField(default=0)
    pipelined = models.PositiveIntegerField(default=0)
    recovered = models.PositiveIntegerField(default=0, help_text="binds/evictions of earlier cycles completed now")
    unschedulable = models.JSONField(default=dict, blank=True)
    decisions = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"cycle {self.pk} {self.status} ({self.binds} binds)"


class IntentKind(models.TextChoices):
    """What a recorded cluster call is."""

    BIND = "bind"
    EVICT = "evict"


class PodIntent(models.Model):
    """A cluster call decided by a committed cycle and not yet acknowledged by the backend.

    Written in the same transaction that records the decision on the pod row (``node_name`` for a
    bind, ``deletion_timestamp`` for an eviction); deleted once the backend call succeeded (or was
    found done already). Whatever is left after a crash is retried by the next cycle, so a gang is
    never half-bound and nothing is bound twice.
    """

    kind = models.CharField(max_length=5, choices=IntentKind.choices)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    node = models.CharField(max_length=253, blank=True, default="")
    run = models.ForeignKey(SchedulingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="intents")
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "namespace", "name"], name="scheduling_podintent_kind_pod")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} -> {self.node}"
