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


def user_group(user_id: int) -> str:
    """Return the control group of every socket of one user (closed when the user loses a tenant or is disabled)."""
    return f"user.{int(user_id)}"


def session_group(session_key: str) -> str:
    """Return the control group of the sockets opened with one login session (closed on logout)."""
    return "session." + "".join(ch for ch in session_key if ch.isalnum())[:64]


def token_group(token_id: int) -> str:
    """Return the control group of the sockets opened with one API token (closed when it is revoked)."""
    return f"token.{int(token_id)}"
