"""What one list or watch selects: the caller's scope, the namespace and the label and field selectors.

Applied to an object as of a revision (a row of the change log and its manifest), so that a watch decides per
event and a list page read at an old revision decides per reconstructed object exactly as the live query does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from volcanoweb.api.listing import Requirement, label_matches, parse_label_selector
from volcanoweb.feed import log, tables
from volcanoweb.feed.log import Change
from volcanoweb.kubeapi import query
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import Access


@dataclass
class Selection:
    """A caller's view of one kind: scope, namespace, field terms and label requirements."""

    resource: KubeResource
    access: Access
    namespace: str | None = None
    terms: list[query.FieldRequirement] = field(default_factory=list)
    labels: list[Requirement] = field(default_factory=list)
    label_selector: str | None = None
    #: queues the caller sees through ``allowed_tenants`` or as public ones (only grows; see ``refresh``)
    known_queues: set[int] = field(default_factory=set)

    @classmethod
    def build(
        cls,
        resource: KubeResource,
        access: Access,
        namespace: str | None,
        terms: list[query.FieldRequirement],
        label_selector: str | None,
    ) -> Selection:
        labels = parse_label_selector(label_selector) if label_selector and resource.labels else []
        selection = cls(resource, access, namespace, terms, labels, label_selector if labels else None)
        selection.refresh()
        return selection

    @property
    def kind(self) -> str:
        return self.resource.plural

    def refresh(self) -> None:
        """Learn the queues visible through ``allowed_tenants`` or as public ones (their rows do not say)."""
        if self.kind != "queues" or self.access.platform_admin:
            return
        tenants = self.access.readable_tenant_ids()
        through = Queue.allowed_tenants.through.objects
        self.known_queues |= set(through.filter(tenant_id__in=tenants).values_list("queue_id", flat=True))
        public = Queue.objects.filter(tenant__isnull=True, allowed_tenants__isnull=True)
        self.known_queues |= set(public.values_list("pk", flat=True))

    def in_scope(self, row: dict[str, Any]) -> bool:
        """Return True when the caller may see the object of this row (and it is in the watched namespace)."""
        if self.namespace is not None and row.get(self.resource.namespace_field) != self.namespace:
            return False
        if self.kind == "commands" and row.get("consumed_at") is not None:
            return False  # a Command the controller acted on is gone from the API (Volcano deletes it)
        if self.access.platform_admin:
            return True
        if self.kind in tables.EVERYONE:
            return True
        tenant = row.get("tenant_id")
        if tenant is not None and tenant in self.access.roles:
            return True
        return self.kind == "queues" and row.get("id") in self.known_queues

    def accepts(self, row: dict[str, Any] | None, obj: dict[str, Any] | None) -> bool:
        """Return True when the object (row and manifest) is in scope and matches the selectors."""
        if row is None or obj is None or not self.in_scope(row):
            return False
        if self.labels and not label_matches(obj.get("metadata", {}).get("labels"), self.labels):
            return False
        return query.matches(self.resource, obj, self.terms)

    def rendered(self, change: Change) -> bool:
        """Whether :meth:`event` has what it needs of ``change`` without the database (its manifests rendered)."""
        cache = change.cache
        if change.after is not None and "after" not in cache:
            return False
        return change.type == log.ADDED or change.before is None or "before" in cache

    def manifest(self, change: Change, which: str) -> dict[str, Any] | None:
        """The manifest of the object before or after a change (rendered once per change and process)."""
        row = change.after if which == "after" else change.before
        if row is None:
            return None
        cached = change.cache.get(which)
        if cached is None:
            cached = self.resource.render(log.instance(change.kind, row))
            if which == "before" and change.type != log.DELETED:
                cached = {**cached, "metadata": {**cached["metadata"], "resourceVersion": str(change.rev)}}
            change.cache[which] = cached
        return cached

    def event(self, change: Change) -> tuple[str, dict[str, Any]] | None:
        """The watch event a change is for this selection (Kubernetes' rules), or None."""
        after = self.manifest(change, "after")
        now = self.accepts(change.after, after)
        before = self.manifest(change, "before") if change.type != log.ADDED else None
        was = self.accepts(change.before, before)
        if now and after is not None:
            return ("MODIFIED" if was else "ADDED"), after
        if was and before is not None:
            return "DELETED", before
        return None
