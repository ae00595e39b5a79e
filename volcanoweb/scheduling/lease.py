"""Step 1 of a scheduling cycle: the cycle lease, so that one worker at a time runs a cycle.

The :class:`~volcanoweb.scheduling.models.SchedulerLease` row is claimed with one conditional UPDATE (expired
→ held by me until ``now + lease``); the claim's ``token`` is checked again under a row lock when the cycle
applies its decisions (fencing, :func:`volcanoweb.scheduling.decisions.apply_result`), so a worker whose
lease ran out cannot apply.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from volcanoweb.scheduling.models import SchedulerLease

LEASE_NAME = "volcano"


class LeaseLost(Exception):
    """The cycle claim expired and was taken by another worker before this one applied."""


def default_holder() -> str:
    """Return this worker's identity: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def lease_seconds() -> float:
    """Return how long a claim lasts: long enough for a slow cycle, short enough to recover."""
    return max(30.0, 10 * float(settings.SCHEDULE_PERIOD))


def claim_cycle(holder: str, seconds: float | None = None) -> int | None:
    """Take the cycle lease if it is free or expired; return the fencing token, or None."""
    now = timezone.now()
    if not SchedulerLease.objects.filter(name=LEASE_NAME).exists():
        try:
            with transaction.atomic():
                SchedulerLease.objects.create(name=LEASE_NAME, expires_at=now - timedelta(seconds=1))
        except IntegrityError:
            pass
    expires = now + timedelta(seconds=seconds if seconds is not None else lease_seconds())
    changed = SchedulerLease.objects.filter(name=LEASE_NAME, expires_at__lte=now).update(
        holder=holder, token=F("token") + 1, expires_at=expires, updated_at=now
    )
    if changed != 1:
        return None
    token = SchedulerLease.objects.filter(name=LEASE_NAME, holder=holder).values_list("token", flat=True).first()
    return int(token) if token is not None else None


def release_cycle(holder: str, token: int) -> None:
    """Give the lease back (only if still ours)."""
    SchedulerLease.objects.filter(name=LEASE_NAME, holder=holder, token=token).update(expires_at=timezone.now())
