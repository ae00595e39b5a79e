"""Channel-layer group names; the only place that spells them."""

from __future__ import annotations


def tenant_group(tenant_id: int) -> str:
    """Return the group for one tenant's changes (jobs, pods, podgroups in its namespaces)."""
    return f"tenant.{int(tenant_id)}"


def admin_group() -> str:
    """Return the group of platform admins, who see every tenant's changes."""
    return "admins"


def cluster_group() -> str:
    """Return the group for cluster-wide changes every user may see (nodes, cycles, queue shares)."""
    return "cluster"
