"""Cluster state: the node mirror, and the database-backed state of the simulated cluster.

Two groups of tables:

* :class:`Node` mirrors the nodes the cluster backend reports (sim or Kubernetes); it is what the
  scheduler and the UI read. Written only by :mod:`volcanoweb.clusters.services`.
* ``Sim*`` tables are the *authoritative* state of the simulated cluster (the "API server" and
  "kubelet" of the sim), shared by every process (web, worker, beat) through the database; see
  ``docs/adr/0014-one-simulated-cluster-engine.md``. Written only by :mod:`volcanoweb.clusters.backends.simdb`.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class NodeKind(models.TextChoices):
    """Coarse node kinds, for display and filtering."""

    CPU = "cpu"
    GPU = "gpu"


class Node(models.Model):
    """A cluster node as last observed through the backend.

    ``allocatable`` and ``capacity`` are integer resource dicts in the scheduler's units
    (cpu millicores, memory bytes, pods and extended resources as counts). ``taints`` keep the
    Kubernetes shape (``[{"key", "value", "effect"}]``). ``ready`` is the Ready condition;
    ``conditions`` keeps the condition list for display.
    """

    name = models.CharField(max_length=253, unique=True)
    kind = models.CharField(max_length=8, choices=NodeKind.choices, default=NodeKind.CPU, db_index=True)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    unschedulable = models.BooleanField(default=False)
    ready = models.BooleanField(default=True, db_index=True)
    conditions = models.JSONField(default=list, blank=True)
    allocatable = models.JSONField(default=dict, blank=True)
    capacity = models.JSONField(default=dict, blank=True)
    #: Measured utilisation in percent per averaging period (``{"10m": {"cpu": 41.5, "memory": 20.0}}``), from the
    #: backend's node metrics (metrics-server, or the simulated cluster's usage model); read by the usage and
    #: rescheduling plugins. ``usage_time`` is when it was measured (None: never).
    usage = models.JSONField(default=dict, blank=True)
    usage_time = models.DateTimeField(null=True, blank=True)
    backend_version = models.CharField(max_length=64, blank=True, default="", help_text="backend resourceVersion")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    resource_version = models.BigIntegerField(
        default=0, help_text="the last revision of the change log that changed this row (stamped by the database)"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SimState(models.Model):
    """The simulated cluster's singleton row (pk 1): its settings and clock; on SQLite its counters and lock.

    On SQLite every mutation of the sim locks this row (``SELECT ... FOR UPDATE``) and advances
    ``resource_version``/``seq``; on PostgreSQL a mutation locks the pods and nodes it changes and takes
    its numbers from a sequence (ADR 0017). The clock is a scaled wall clock anchored at (``wall_start``,
    ``sim_start``) with ``speed``; ``now`` is a simulated time reached (never goes back; on PostgreSQL
    written about once a wall second).
    """

    speed = models.FloatField(default=1.0)
    sim_start = models.FloatField(default=0.0)
    wall_start = models.FloatField(default=0.0)
    now = models.FloatField(default=0.0)
    default_duration = models.FloatField(default=60.0)
    startup_delay = models.FloatField(default=0.0)
    delete_grace = models.FloatField(default=0.0)
    resource_version = models.BigIntegerField(default=0)
    seq = models.BigIntegerField(default=0)
    pool = models.TextField(blank=True, default="", help_text="the node pool spec the sim was seeded with")

    def __str__(self) -> str:
        return f"sim t={self.now:.1f}s x{self.speed}"


class SimNode(models.Model):
    """A simulated node: its ``NodeInfo`` (JSON), capacity and the resources admitted on it (integers)."""

    name = models.CharField(max_length=253, unique=True)
    info = models.JSONField(default=dict)
    capacity = models.JSONField(default=dict)
    used = models.JSONField(default=dict)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SimPod(models.Model):
    """A simulated pod with its kubelet timers (simulated seconds; null when not armed).

    ``spec`` is a ``PodSpec`` dict, ``requests`` the effective requests (quantity strings) and
    ``usage`` the integer resources it holds on its node once admitted.
    """

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)
    spec = models.JSONField(default=dict)
    requests = models.JSONField(default=dict)
    usage = models.JSONField(default=dict)
    phase = models.CharField(max_length=10, default="Pending")
    node_name = models.CharField(max_length=253, blank=True, default="", db_index=True)
    exit_code = models.IntegerField(null=True, blank=True)
    reason = models.CharField(max_length=100, blank=True, default="")
    message = models.TextField(blank=True, default="")
    deleting = models.BooleanField(default=False)
    admitted = models.BooleanField(default=False)
    resource_version = models.BigIntegerField(default=0)
    created_at = models.FloatField(default=0.0)
    started_at = models.FloatField(null=True, blank=True)
    finished_at = models.FloatField(null=True, blank=True)
    start_at = models.FloatField(null=True, blank=True, db_index=True)
    finish_at = models.FloatField(null=True, blank=True, db_index=True)
    remove_at = models.FloatField(null=True, blank=True, db_index=True)
    restart_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="clusters_simpod_ns_name")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class SimObject(models.Model):
    """A simulated Service, ConfigMap or Secret (``kind``), stored as a JSON document."""

    kind = models.CharField(max_length=16)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["kind", "namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "namespace", "name"], name="clusters_simobject_key")]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class SimEvent(models.Model):
    """A change in the simulated cluster not yet consumed by ``poll_events`` (a ``BackendEvent`` dict)."""

    kind = models.CharField(max_length=8)
    type = models.CharField(max_length=10)
    object = models.JSONField(default=dict)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.type} {self.kind}"
