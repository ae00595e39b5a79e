"""Volcano Jobs with their tasks, pods and PodGroups; PriorityClasses; job Commands; Events."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from volcanoweb.tenancy.models import KubeObject, NamespacedObject, Tenant


class JobPhase(models.TextChoices):
    """Volcano job phases (status.state.phase)."""

    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


FINISHED_JOB_PHASES = (JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED)


class PodPhase(models.TextChoices):
    """Kubernetes pod phases."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class PodGroupPhase(models.TextChoices):
    """Volcano PodGroup phases."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class CommandAction(models.TextChoices):
    """User-issued Volcano Command actions (bus.volcano.sh/v1alpha1)."""

    ABORT = "AbortJob"
    RESUME = "ResumeJob"
    RESTART = "RestartJob"
    TERMINATE = "TerminateJob"
    COMPLETE = "CompleteJob"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


class JobQuerySet(models.QuerySet["Job"]):
    """Queries over jobs."""

    def pending(self) -> JobQuerySet:
        """Return jobs in phase Pending."""
        return self.filter(phase=JobPhase.PENDING)

    def unfinished(self) -> JobQuerySet:
        """Return jobs not in a finished phase."""
        return self.exclude(phase__in=FINISHED_JOB_PHASES)


class Job(NamespacedObject):
    """A ``batch.volcano.sh/v1alpha1`` Job.

    ``spec`` is the full spec after Volcano's defaulting; ``status`` is the status as Volcano reports it
    (``state.phase``, pod counters, ``minAvailable``, ``retryCount``, ``version``, ``conditions``...),
    written by the runtime. The other columns are denormalised copies for filtering and sorting.
    Deletion: a job with ``finalizers`` gets ``deletion_timestamp`` and is removed by the runtime once
    it has cleaned up; one without is removed at once.
    """

    queue_name = models.CharField(max_length=253, default="default", db_index=True)
    phase = models.CharField(max_length=12, choices=JobPhase.choices, default=JobPhase.PENDING, db_index=True)
    min_available = models.PositiveIntegerField(default=0)
    max_retry = models.PositiveIntegerField(default=3)
    priority_class_name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    scheduler_name = models.CharField(max_length=63, default="volcano")
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    owner_references = models.JSONField(default=list, blank=True)
    controller_uid = models.UUIDField(null=True, blank=True, db_index=True, help_text="CronJob/JobFlow owner")
    finalizers = models.JSONField(default=list, blank=True)
    deletion_timestamp = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="jobs_job_ns_name")]
        indexes = [models.Index(fields=["tenant", "phase"]), models.Index(fields=["queue_name", "phase"])]

    @property
    def total_replicas(self) -> int:
        """Return Σ tasks[].replicas from the spec."""
        return sum(int(task.get("replicas") or 0) for task in self.spec.get("tasks", []))


class Task(models.Model):
    """One entry of a job's ``spec.tasks[]`` (a role, not a pod), with its per-phase pod counts."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tasks")
    name = models.CharField(max_length=63)
    position = models.PositiveIntegerField(help_text="index in spec.tasks")
    replicas = models.PositiveIntegerField(default=0)
    min_available = models.PositiveIntegerField(default=0)
    max_retry = models.PositiveIntegerField(default=3)
    template = models.JSONField(default=dict)
    policies = models.JSONField(default=list, blank=True)
    depends_on = models.JSONField(null=True, blank=True)
    status = models.JSONField(default=dict, blank=True, help_text='taskStatusCount entry: {"phase": {...}}')

    class Meta:
        ordering = ["job", "position"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="jobs_task_job_name")]

    def __str__(self) -> str:
        return f"{self.job}:{self.name}"


class PodGroup(NamespacedObject):
    """A ``scheduling.volcano.sh/v1beta1`` PodGroup: job-owned (``job`` set, named ``<job>-<uid>``) or standalone."""

    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="podgroup")
    queue_name = models.CharField(max_length=253, default="default", db_index=True)
    min_member = models.PositiveIntegerField(default=0)
    min_task_member = models.JSONField(default=dict, blank=True)
    min_resources = models.JSONField(null=True, blank=True, help_text="Kubernetes quantity strings")
    priority_class_name = models.CharField(max_length=253, blank=True, default="")
    phase = models.CharField(max_length=10, choices=PodGroupPhase.choices, default=PodGroupPhase.PENDING, db_index=True)
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    owner_references = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="jobs_podgroup_ns_name")]


class Pod(NamespacedObject):
    """A pod: created by the job controller for a job's task, or submitted plainly (``job`` empty).

    ``requests`` holds the effective requests as integers (cpu in millicores, memory in bytes, others
    as counts), the unit the scheduler uses. ``podgroup`` links the group named by the
    ``scheduling.k8s.io/group-name`` annotation (``group_name``) once it exists.
    """

    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="pods")
    podgroup = models.ForeignKey(PodGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="pods")
    group_name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    task_name = models.CharField(max_length=63, blank=True, default="")
    index = models.PositiveIntegerField(null=True, blank=True)
    phase = models.CharField(max_length=10, choices=PodPhase.choices, default=PodPhase.PENDING, db_index=True)
    node_name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    exit_code = models.IntegerField(null=True, blank=True)
    scheduler_name = models.CharField(max_length=63, default="default-scheduler")
    priority_class_name = models.CharField(max_length=253, blank=True, default="")
    priority = models.IntegerField(null=True, blank=True)
    requests = models.JSONField(default=dict, blank=True)
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    owner_references = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deletion_timestamp = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="jobs_pod_ns_name")]
        indexes = [models.Index(fields=["job", "task_name"])]


class ResourceQuota(NamespacedObject):
    """A ``v1`` ResourceQuota: ``hard`` limits of a namespace (Kubernetes quantity strings by resource name).

    Read by the scheduler's ``resourcequota`` plugin; its ``used`` amounts are summed from the
    namespace's pods when the snapshot is built (there is no quota controller keeping a status).
    """

    hard = models.JSONField(default=dict, blank=True, help_text="Kubernetes quantity strings")
    spec = models.JSONField(default=dict)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="jobs_resourcequota_ns_name")]


class PriorityClass(KubeObject):
    """A ``scheduling.k8s.io/v1`` PriorityClass (cluster-scoped); jobs and pods refer to it by name."""

    value = models.IntegerField(default=0)
    global_default = models.BooleanField(default=False)
    description = models.TextField(blank=True, default="")
    preemption_policy = models.CharField(max_length=32, default="PreemptLowerPriority")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "priority classes"
        constraints = [models.UniqueConstraint(fields=["name"], name="jobs_priorityclass_name")]


class HyperNode(KubeObject):
    """A ``topology.volcano.sh/v1alpha1`` HyperNode (cluster-scoped): a network domain of ``tier``
    whose ``members`` (the manifest's ``spec.members``) are nodes or lower HyperNodes."""

    tier = models.PositiveIntegerField(default=0)
    tier_name = models.CharField(max_length=253, blank=True, default="")
    members = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["tier", "name"]
        constraints = [models.UniqueConstraint(fields=["name"], name="jobs_hypernode_name")]


class Command(models.Model):
    """A user command (Volcano ``bus.volcano.sh/v1alpha1`` Command) waiting for the runtime.

    The runtime consumes a command at most once: it sets ``consumed_at`` (and ``result``) in the same
    transaction in which it acts on it. A consumed command is gone from the Kubernetes API (Volcano's
    controller deletes the Command it acted on); the row stays as the job's command history.
    """

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    #: ``metadata.name`` as the client gave it (or from its ``generateName``); "" for the REST API's commands,
    #: which are named ``<target>-<action>-<uid>``.
    name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    action = models.CharField(max_length=20, choices=CommandAction.choices)
    target_kind = models.CharField(max_length=20, default="Job")
    target_namespace = models.CharField(max_length=63, blank=True, default="")
    target_name = models.CharField(max_length=253)
    target_uid = models.UUIDField(null=True, blank=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="commands")
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=100, blank=True, default="")
    message = models.TextField(blank=True, default="")
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    consumed_at = models.DateTimeField(null=True, blank=True, db_index=True)
    result = models.TextField(blank=True, default="")

    resource_version = models.BigIntegerField(
        default=0, help_text="the last revision of the change log that changed this row (stamped by the database)"
    )

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target_kind} {self.target_namespace}/{self.target_name}"


class EventType(models.TextChoices):
    """Kubernetes event types."""

    NORMAL = "Normal"
    WARNING = "Warning"


class Event(models.Model):
    """A Kubernetes-style event about an object, written by the runtime (repeats bump ``count``)."""

    namespace = models.CharField(max_length=63, blank=True, default="", db_index=True)
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    involved_kind = models.CharField(max_length=40)
    involved_namespace = models.CharField(max_length=63, blank=True, default="")
    involved_name = models.CharField(max_length=253)
    involved_uid = models.UUIDField(null=True, blank=True, db_index=True)
    type = models.CharField(max_length=10, choices=EventType.choices, default=EventType.NORMAL)
    reason = models.CharField(max_length=100)
    message = models.TextField(blank=True, default="")
    count = models.PositiveIntegerField(default=1)
    source = models.CharField(max_length=63, blank=True, default="")
    first_timestamp = models.DateTimeField(default=timezone.now)
    last_timestamp = models.DateTimeField(default=timezone.now, db_index=True)

    resource_version = models.BigIntegerField(
        default=0, help_text="the last revision of the change log that changed this row (stamped by the database)"
    )

    class Meta:
        ordering = ["-last_timestamp", "-id"]
        indexes = [models.Index(fields=["involved_kind", "involved_namespace", "involved_name"])]

    def __str__(self) -> str:
        return f"{self.type} {self.reason} {self.involved_kind}/{self.involved_name}"
