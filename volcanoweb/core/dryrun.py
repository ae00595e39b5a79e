"""Whether the current request is a dry run (``?dryRun=All``, or ``dryRun`` in a DELETE's DeleteOptions).

The API's base view (``api.base.ApiView``) runs a dry-run write inside a transaction that it rolls back
(so the database, the database-backed simulated cluster, the audit log and the controllers' on-commit
work are untouched) and drops the live messages it queued; it sets this flag for that time so that what
lies outside the database can tell: the Kubernetes backend sends its writes with ``dryRun=All``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_active: ContextVar[bool] = ContextVar("volcanoweb_dry_run", default=False)


def active() -> bool:
    """Return True while a dry-run request is being served in this context."""
    return _active.get()


@contextmanager
def marked() -> Iterator[None]:
    """Mark the enclosed code as a dry run."""
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)
