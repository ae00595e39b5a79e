"""Channel-layer group names; the only place that spells them."""

from __future__ import annotations

import re

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def tenant_group(tenant_id: int | str) -> str:
    """Return the group for one tenant's changes."""
    return f"tenant.{_SAFE.sub('_', str(tenant_id))}"


def cluster_group() -> str:
    """Return the group for cluster-wide changes (nodes, cycles, queue shares)."""
    return "cluster"


PING_GROUP = "ping"
