"""Writes for HyperNodes (the cluster's network topology, platform admins only), and Volcano's label
discovery, which makes them from the nodes' labels."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from volcanoweb.audit import services as audit
from volcanoweb.clusters.models import Node
from volcanoweb.core.errors import Errors
from volcanoweb.jobs.models import HyperNode
from volcanoweb.jobs.services.common import delete_cluster_scoped, store_cluster_scoped
from volcanoweb.live import notify
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.objects import Outcome, bump, check_existence, check_version, prepare, raise_if
from volcanoweb.manifests.workflows import check_hypernode
from volcanoweb.tenancy.access import Access, forbidden


@transaction.atomic
def apply_hypernode(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Create or update a HyperNode (platform admins only: the cluster's network topology)."""
    info = parse.HYPERNODE
    meta, _ = prepare(access, doc, info, None)
    if not access.platform_admin:
        raise forbidden(access, "create", info, None, meta.name)
    existing = HyperNode.objects.select_for_update(no_key=True).filter(name=meta.name).first()
    check_existence(info, meta.name, existing, mode)
    check_version(info, meta, existing)
    errors = Errors()
    fields = check_hypernode(errors, meta.name, doc)
    raise_if(errors, info, meta.name)
    assert fields is not None
    values = {
        "tier": fields["tier"],
        "tier_name": fields["tierName"],
        "members": fields["members"],
        "labels": meta.labels,
        "annotations": meta.annotations,
    }
    return store_cluster_scoped(access, info, HyperNode, render.hypernode, meta.name, existing, values)


@transaction.atomic
def delete_hypernode(access: Access, name: str) -> Outcome:
    """Delete a HyperNode (platform admins only)."""
    return delete_cluster_scoped(access, parse.HYPERNODE, HyperNode, render.hypernode, name)


#: What Volcano's label-based HyperNode discovery reads (its ``topologyA3`` example): a node's tier-1
#: HyperNode and, above it, its tier-2 one; and the label it puts on the HyperNodes it creates.
DISCOVERY_TIERS = ("volcano.sh/hypernode", "volcano.sh/hypercluster")
DISCOVERY_SOURCE = "volcano.sh/network-topology-source"


def _discovered(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tier": tier, "tier_name": "", "members": members, "labels": {DISCOVERY_SOURCE: "label"}, "annotations": {}}


@transaction.atomic
def discover_hypernodes() -> int:
    """Volcano's label discoverer: a tier-1 HyperNode per value of ``volcano.sh/hypernode`` on the
    nodes (its members: the nodes with that label, by ``labelMatch``) and a tier-2 one per value of
    ``volcano.sh/hypercluster`` (its members: the tier-1 HyperNodes of its nodes). The HyperNodes it
    made earlier (labelled ``volcano.sh/network-topology-source: label``) that no node names any more
    are deleted; HyperNodes written by people are never touched. Returns how many rows changed."""
    rack_key, spine_key = DISCOVERY_TIERS
    racks: dict[str, set[str]] = {}
    spines: dict[str, set[str]] = {}
    for labels in Node.objects.values_list("labels", flat=True):
        labels = labels or {}
        rack = labels.get(rack_key)
        if not rack:
            continue
        racks.setdefault(rack, set())
        spine = labels.get(spine_key)
        if spine:
            spines.setdefault(spine, set()).add(rack)
    wanted = {
        rack: _discovered(rack, 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {rack_key: rack}}}}])
        for rack in racks
    }
    for spine, members in spines.items():
        wanted[spine] = _discovered(
            spine, 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": r}}} for r in sorted(members)]
        )
    existing = {h.name: h for h in HyperNode.objects.select_for_update(no_key=True).filter(name__in=list(wanted))}
    mine = HyperNode.objects.select_for_update(no_key=True).filter(**{f"labels__{DISCOVERY_SOURCE}": "label"})
    changed = 0
    for gone in mine.exclude(name__in=list(wanted)):
        before = render.hypernode(gone)
        gone.delete()
        audit.record(None, "delete", "HyperNode", gone.name, before=before)
        notify.changed("HyperNode", gone, "delete")
        changed += 1
    for name, values in sorted(wanted.items()):
        found = existing.get(name)
        if found is None:
            created = HyperNode.objects.create(name=name, **values)
            audit.record(None, "create", "HyperNode", name, after=render.hypernode(created))
            notify.changed("HyperNode", created, "create")
            changed += 1
            continue
        if (found.labels or {}).get(DISCOVERY_SOURCE) != "label":
            continue  # a person's HyperNode of the same name wins
        if all(getattr(found, k) == v for k, v in values.items()):
            continue
        before = render.hypernode(found)
        for key, value in values.items():
            setattr(found, key, value)
        found.save(update_fields=[*values, *bump(found, spec_changed=True)])
        audit.record(None, "update", "HyperNode", name, before=before, after=render.hypernode(found))
        notify.changed("HyperNode", found, "update")
        changed += 1
    return changed
