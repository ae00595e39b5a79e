"""Writes for the scheduler configuration: new validated versions and activation."""

from __future__ import annotations

from typing import Any

import yaml
from django.db import transaction
from django.db.models import Max

from scheduler.config import PRODUCT_CONFIG_YAML, ConfigError, parse_config
from volcanoweb.audit import services as audit
from volcanoweb.core.errors import Cause, Invalid, not_found
from volcanoweb.live import notify
from volcanoweb.manifests import parse
from volcanoweb.manifests.objects import Outcome
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy.access import Access, forbidden

INFO = parse.SCHEDULER_CONFIG
MAX_CONFIG_BYTES = 64 * 1024


def active_profile() -> SchedulerProfile | None:
    """Return the active version, or None when only the built-in default applies (one query)."""
    return SchedulerProfile.objects.filter(active=True).first()


def active_yaml() -> str:
    """Return the YAML the scheduler should run with (the built-in default when nothing is stored)."""
    profile = active_profile()
    return profile.yaml if profile is not None else PRODUCT_CONFIG_YAML


def validate_config(text: str) -> Any:
    """Return the parsed configuration, or raise Invalid with the ConfigError's path as the field."""
    if len(text.encode()) > MAX_CONFIG_BYTES:
        raise Invalid(f"the scheduler configuration is too large (limit {MAX_CONFIG_BYTES} bytes)", kind=INFO.kind)
    try:
        return parse_config(text)
    except ConfigError as exc:
        cause = Cause(exc.path, exc.detail)
        raise Invalid(
            f'{INFO.kind} "scheduler" is invalid: {exc}', kind=INFO.kind, name="scheduler", causes=[cause]
        ) from None


def _same_config(a: str, b: str) -> bool:
    try:
        return bool(yaml.safe_load(a) == yaml.safe_load(b))
    except yaml.YAMLError:
        return False


@transaction.atomic
def save_config(access: Access, text: str, *, comment: str = "", source: str = "api") -> Outcome:
    """Store a new active version (platform admins only) after validating it with the core's parser.

    Re-submitting a configuration equal to the active one changes nothing (``unchanged``).
    """
    if not access.platform_admin:
        raise forbidden(access, "update", INFO, None, "scheduler")
    validate_config(text)
    current = SchedulerProfile.objects.select_for_update(no_key=True).filter(active=True).first()
    if current is not None and _same_config(current.yaml, text):
        return Outcome("unchanged", INFO.kind, "scheduler", None, manifest(current))
    before = manifest(current) if current is not None else None
    if current is not None:
        current.active = False
        current.save(update_fields=["active"])
    version = (SchedulerProfile.objects.aggregate(v=Max("version"))["v"] or 0) + 1
    profile = SchedulerProfile.objects.create(
        version=version,
        yaml=text,
        active=True,
        comment=comment[:200],
        created_by=access.user if getattr(access.user, "pk", None) else None,
    )
    after = manifest(profile)
    audit.record(
        access.user,
        "update" if current else "create",
        INFO.kind,
        "scheduler",
        before=before,
        after=after,
        source=source,
    )
    notify.changed(INFO.kind, profile, "update")
    return Outcome("configured" if current else "created", INFO.kind, "scheduler", None, after)


@transaction.atomic
def activate_version(access: Access, version: int, *, source: str = "api") -> SchedulerProfile:
    """Make a stored version the active one again (platform admins only)."""
    if not access.platform_admin:
        raise forbidden(access, "update", INFO, None, "scheduler")
    profile = SchedulerProfile.objects.select_for_update(no_key=True).filter(version=version).first()
    if profile is None:
        raise not_found("scheduler-config versions", str(version), INFO.kind)
    validate_config(profile.yaml)
    current = SchedulerProfile.objects.select_for_update(no_key=True).filter(active=True).exclude(pk=profile.pk).first()
    if current is not None:
        current.active = False
        current.save(update_fields=["active"])
    if not profile.active:
        profile.active = True
        profile.save(update_fields=["active"])
        audit.record(access.user, "activate", INFO.kind, "scheduler", after=manifest(profile), source=source)
        notify.changed(INFO.kind, profile, "update")
    return profile


def manifest(profile: SchedulerProfile | None) -> dict[str, Any]:
    """Return the API shape of a version (or of the built-in default when None)."""
    if profile is None:
        return {
            "version": 0,
            "active": True,
            "builtin": True,
            "yaml": PRODUCT_CONFIG_YAML,
            "comment": "built-in default",
        }
    return {
        "version": profile.version,
        "active": profile.active,
        "builtin": False,
        "yaml": profile.yaml,
        "comment": profile.comment,
        "createdBy": profile.created_by.username if profile.created_by else None,
        "createdAt": profile.created_at.isoformat(),
    }


def apply_document(
    access: Access, doc: dict[str, Any], default_namespace: str | None = None, *, mode: str = "apply"
) -> Outcome:
    """Apply a bare scheduler configuration document (as in the cookbook's 12-scheduler-conf.yaml)."""
    return save_config(access, yaml.safe_dump(doc, sort_keys=False))


# --- The scheduling cycle (implemented in volcanoweb.scheduling.cycles and the step modules beside it) ---

from volcanoweb.scheduling.cycles import run_cycle  # noqa: E402
from volcanoweb.scheduling.decisions import apply_result  # noqa: E402
from volcanoweb.scheduling.lease import claim_cycle, release_cycle  # noqa: E402

__all__ = [
    "activate_version",
    "active_profile",
    "active_yaml",
    "apply_document",
    "apply_result",
    "claim_cycle",
    "manifest",
    "release_cycle",
    "run_cycle",
    "save_config",
    "validate_config",
]
