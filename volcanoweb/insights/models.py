"""What the scheduler saw and decided, kept for explanation: cycle inputs, job waits, queue history.

These rows only observe the scheduler; nothing here feeds back into a decision.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from volcanoweb.jobs.models import Job
from volcanoweb.scheduling.models import SchedulingRun
from volcanoweb.tenancy.models import Tenant


class CycleSnapshot(models.Model):
    """The snapshot part of one or more consecutive cycle inputs, stored once (zlib-compressed).

    Consecutive quiet cycles see the same objects and differ only in their clock, so the snapshot's
    text without its clock (``,"now":…``, kept on each :class:`CycleInput`) is shared: ``data`` is that
    text, and the clock goes in at character ``now_at``. ``last_run`` is the newest cycle input using it
    (a row whose ``last_run`` is older than every kept input is unused and pruned).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    data = models.BinaryField()
    size = models.PositiveIntegerField(default=0, help_text="uncompressed bytes")
    now_at = models.PositiveIntegerField(default=0, help_text="where the clock's text goes in the snapshot text")
    last_run = models.BigIntegerField(default=0, db_index=True)

    def __str__(self) -> str:
        return f"cycle snapshot {self.id} ({self.size} bytes, last cycle {self.last_run})"


class CycleInput(models.Model):
    """One cycle's complete input (snapshot + configuration) and its decisions, as a replayable file.

    ``data`` is the zlib-compressed canonical JSON of a ``scheduler.replay`` cycle input document up to
    its snapshot (``…,"snapshot":``); the snapshot is ``snapshot`` with this cycle's clock ``now``
    put in (``volcanoweb.insights.recording.input_text`` joins them). Rows written before
    ``snapshot`` existed hold the whole document in ``data``. The last ``INSIGHTS_KEEP_CYCLE_INPUTS`` rows
    are kept, and, for ``INSIGHTS_DECIDED_CYCLE_RETENTION`` seconds, those of cycles that decided something
    (``decided``: a bind, an eviction or a job's first unschedulable verdict; see :class:`CycleDecision`).
    """

    run = models.OneToOneField(SchedulingRun, on_delete=models.CASCADE, related_name="cycle_input")
    at = models.DateTimeField(default=timezone.now, db_index=True)
    config_version = models.PositiveIntegerField(default=0)
    data = models.BinaryField()
    # DO_NOTHING: the database's foreign key keeps a used snapshot; the prune deletes unused ones by last_run
    snapshot = models.ForeignKey(
        CycleSnapshot, null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+", db_index=True
    )
    now = models.CharField(max_length=64, blank=True, default="", help_text='the clock\'s text, ,"now":<seconds>')
    size = models.PositiveIntegerField(default=0, help_text="uncompressed bytes")
    decided = models.BooleanField(
        default=False, db_index=True, help_text="bound, evicted, or first refused a job or refused it anew"
    )

    class Meta:
        ordering = ["-run_id"]

    def __str__(self) -> str:
        return f"cycle {self.run_id} input ({self.size} bytes)"


class DecisionKind(models.TextChoices):
    """What a cycle decided about a job, for the cycle list's filters."""

    BIND = "bind", "bound pods"
    EVICT = "evict", "evicted pods"
    UNSCHEDULABLE = "unschedulable", "first unschedulable verdict"
    VERDICT = "verdict", "changed unschedulable verdict"


class CycleDecision(models.Model):
    """One job a kept cycle decided about (bound or evicted its pods, first found it unschedulable, or gave it a
    new unschedulable verdict: another reason kind or words, the cycle a waiting job's page cites).

    Written with the cycle's input (``run_id``: its run) and deleted with it; the cycle list filters by
    job, queue and kind through these rows. ``job`` is the Volcano Job's ``ns/name`` (its PodGroup's key when
    the PodGroup has no Job: Volcano names a Job's PodGroup ``<job>-<uid>``)."""

    run_id = models.BigIntegerField(db_index=True)
    kind = models.CharField(max_length=16, choices=DecisionKind.choices)
    podgroup_key = models.CharField(max_length=320)
    job = models.CharField(max_length=320, db_index=True)
    queue = models.CharField(max_length=253, blank=True, default="", db_index=True)
    pods = models.PositiveIntegerField(default=0, help_text="pods bound or evicted (0 for a verdict)")

    class Meta:
        ordering = ["-run_id", "kind", "job"]

    def __str__(self) -> str:
        return f"cycle {self.run_id} {self.kind} {self.job}"


class EntryKind(models.TextChoices):
    """A timeline entry is a wait interval or a milestone (an instant)."""

    WAIT = "wait"
    MILESTONE = "milestone"


class TimelineEntry(models.Model):
    """One interval of a PodGroup's wait for one reason (``ended_at`` null: still waiting), or a milestone.

    Wait intervals carry the core's structured reason (kind, plugin, message, numbers); a new interval
    starts when the reason's kind or message changes. Milestones: ``Inqueue`` (admitted by enqueue),
    ``Bound`` (the cycle bound the gang's first pods), ``Running``.
    """

    podgroup_key = models.CharField(max_length=320, db_index=True)
    namespace = models.CharField(max_length=63)
    # No database constraint: checking one at the recording's commit takes a key-share lock on the job row,
    # which waits for the job controller holding that row (FOR UPDATE) under load: 0.2-1.5 s per busy cycle
    # in the stack (docs/performance.md). Django still deletes a job's entries with the job (CASCADE).
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    queue = models.CharField(max_length=253, blank=True, default="")
    kind = models.CharField(max_length=10, choices=EntryKind.choices, default=EntryKind.WAIT)
    reason = models.CharField(max_length=40, help_text="the core's reason kind, or the milestone name")
    plugin = models.CharField(max_length=63, blank=True, default="")
    message = models.TextField(blank=True, default="")
    numbers = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    started_run = models.BigIntegerField(default=0)
    ended_run = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [models.Index(fields=["ended_at", "kind"]), models.Index(fields=["queue", "reason", "started_at"])]

    def __str__(self) -> str:
        return f"{self.podgroup_key} {self.kind} {self.reason} from {self.started_at:%H:%M:%S}"


class Resolution(models.TextChoices):
    """Queue history roll-ups: one sample per cycle, per minute, per hour."""

    CYCLE = "cycle"
    MINUTE = "minute"
    HOUR = "hour"


class QueueSample(models.Model):
    """A queue's state at one cycle, or its average over a minute or an hour (``samples`` cycles).

    Resource maps are in scheduler units (millicores, bytes, counts); ``demand`` is the requests of the
    queue's pending pods; ``jobs`` counts PodGroups per phase.
    """

    resolution = models.CharField(max_length=6, choices=Resolution.choices)
    queue = models.CharField(max_length=253)
    bucket = models.DateTimeField(help_text="the cycle's time, or the start of the minute/hour")
    samples = models.PositiveIntegerField(default=1)
    run_id = models.BigIntegerField(default=0, help_text="last cycle folded into this sample")
    allocated = models.JSONField(default=dict, blank=True)
    deserved = models.JSONField(default=dict, blank=True)
    guarantee = models.JSONField(default=dict, blank=True)
    capability = models.JSONField(default=dict, blank=True)
    demand = models.JSONField(default=dict, blank=True)
    jobs = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["bucket", "id"]
        constraints = [
            models.UniqueConstraint(fields=["resolution", "queue", "bucket"], name="insights_queuesample_unique")
        ]
        indexes = [models.Index(fields=["queue", "resolution", "bucket"])]

    def __str__(self) -> str:
        return f"{self.queue} {self.resolution} {self.bucket:%Y-%m-%d %H:%M:%S}"
