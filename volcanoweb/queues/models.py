"""Hierarchical queues (scheduling.volcano.sh/v1beta1 Queue)."""

from __future__ import annotations

from django.db import models

from volcanoweb.tenancy.models import KubeObject, Tenant

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"
#: Queue annotation naming the owning tenant (tenant admins of it may edit the queue and add children).
TENANT_ANNOTATION = "volcanoweb.io/tenant"
#: Queue annotation: comma-separated tenants allowed to submit (besides the owner).
ALLOWED_TENANTS_ANNOTATION = "volcanoweb.io/allowed-tenants"
#: Queue annotation maintained for hierarchical close/open (Volcano's).
CLOSED_BY_PARENT_ANNOTATION = "volcano.sh/closed-by-parent"


class QueueState(models.TextChoices):
    """Volcano queue states (status.state)."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class QueueQuerySet(models.QuerySet["Queue"]):
    """Queries over queues."""

    def usable_by(self, tenant: Tenant) -> QueueQuerySet:
        """Return queues the tenant may submit to: owned, explicitly allowed, or public (no owner, no list)."""
        public = models.Q(tenant__isnull=True, allowed_tenants__isnull=True)
        return self.filter(models.Q(tenant=tenant) | models.Q(allowed_tenants=tenant) | public).distinct()


class Queue(KubeObject):
    """A cluster-scoped queue in the hierarchy under ``root``.

    ``spec`` keeps the whole spec as applied (after defaulting) for round trips; the columns mirror the
    fields the scheduler and the UI use. Quantities stay Kubernetes strings ("4", "16Gi"). The status
    columns (``allocated`` and the PodGroup counts) are written by the runtime.
    """

    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="owned_queues", help_text="owner"
    )
    allowed_tenants = models.ManyToManyField(Tenant, blank=True, related_name="allowed_queues")
    weight = models.PositiveIntegerField(default=1)
    capability = models.JSONField(default=dict, blank=True)
    deserved = models.JSONField(default=dict, blank=True)
    guarantee = models.JSONField(default=dict, blank=True, help_text="spec.guarantee.resource")
    reclaimable = models.BooleanField(default=True)
    priority = models.IntegerField(default=0)
    state = models.CharField(max_length=10, choices=QueueState.choices, default=QueueState.OPEN, db_index=True)
    spec = models.JSONField(default=dict, blank=True)
    # status, filled by the runtime
    allocated = models.JSONField(default=dict, blank=True)
    pending = models.PositiveIntegerField(default=0)
    running = models.PositiveIntegerField(default=0)
    inqueue = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    unknown = models.PositiveIntegerField(default=0)

    objects = QueueQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["name"], name="queues_queue_name")]

    @property
    def is_root(self) -> bool:
        """Return True for the root of the hierarchy."""
        return self.name == ROOT_QUEUE

    def ancestors(self) -> list[Queue]:
        """Return the parent chain, nearest first (one query per level)."""
        chain: list[Queue] = []
        node = self.parent
        while node is not None and node not in chain:
            chain.append(node)
            node = node.parent
        return chain

    def depth(self) -> int:
        """Return the number of levels below root (root is 0)."""
        return len(self.ancestors()) if not self.is_root else 0
