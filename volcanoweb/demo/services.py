"""Create the demo once: tenants and users, the cookbook queue trees, a few cookbook jobs."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from volcanoweb.apply import apply_documents
from volcanoweb.manifests import parse
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.tenancy.models import Membership, Namespace, Role, Tenant

log = logging.getLogger(__name__)

DEMO_DIR = Path(__file__).resolve().parent
COOKBOOK_DIR = DEMO_DIR / "cookbook"
DEMO_PASSWORD = "volcano-demo"  # published demo credentials; only `make run` and `make stack --seed` create them


@dataclass(frozen=True)
class DemoUser:
    """One demo login."""

    username: str
    tenant: str | None
    role: str
    note: str


TENANTS = {
    "ml": ("ML platform", ["ml"]),
    "data": ("Data engineering", ["data"]),
    "dev": ("Developer productivity", ["dev"]),
}
USERS = [
    DemoUser("admin", None, "platform-admin", "platform admin: every tenant, the scheduler configuration"),
    DemoUser("alice", "ml", Role.TENANT_ADMIN, "tenant admin of ml (queues ml-team, ml-training)"),
    DemoUser("bob", "ml", Role.MEMBER, "member of ml"),
    DemoUser("carol", "data", Role.TENANT_ADMIN, "tenant admin of data (queues data-team, data-processing)"),
    DemoUser("dave", "dev", Role.TENANT_ADMIN, "tenant admin of dev (queues dev-team, ci-cd, hpc)"),
]
#: (cookbook file, namespace) applied as demo jobs.
DEMO_JOBS = [
    ("01-pytorch-distributed.yaml", "ml"),
    ("02-tensorflow-ps.yaml", "ml"),
    ("06-flink-job.yaml", "data"),
    ("07-ci-build-batch.yaml", "dev"),
    ("08-ci-pipeline.yaml", "dev"),
]


def logins() -> list[str]:
    """Return one line per demo login, for the start-up banner."""
    return [f"{user.username} / {DEMO_PASSWORD}  ({user.note})" for user in USERS]


def is_seeded() -> bool:
    """Return True once the demo tenants exist."""
    return Tenant.objects.filter(name__in=TENANTS).count() == len(TENANTS)


def with_enqueue_gate(doc: dict[str, Any]) -> dict[str, Any]:
    """The cookbook's scheduler configuration with the product's enqueuegate plugin added to its first tier (as
    in the built-in configuration, ADR 0028): the demo keeps a job that can never fit any node out of the queues'
    admission room. A document that names the plugin already, or has no tiers, is returned as it is."""
    tiers = doc.get("tiers")
    if not isinstance(tiers, list) or not tiers or not isinstance(tiers[0], dict):
        return doc
    names = [p.get("name") for tier in tiers if isinstance(tier, dict) for p in tier.get("plugins") or []]
    if "enqueuegate" in names:
        return doc
    first = dict(tiers[0])
    first["plugins"] = [*(first.get("plugins") or []), {"name": "enqueuegate"}]
    return {**doc, "tiers": [first, *tiers[1:]]}


def _documents(path: Path) -> list[dict[str, object]]:
    return parse.parse_documents(path.read_bytes())


@transaction.atomic
def seed_demo() -> bool:
    """Create the demo data unless present; return True if it was created now."""
    if is_seeded():
        return False
    ensure_builtin_queues()  # a database whose tables were flushed lost the migration's rows
    tenants: dict[str, Tenant] = {}
    for name, (display, namespaces) in TENANTS.items():
        tenant = Tenant.objects.create(name=name, display_name=display)
        tenants[name] = tenant
        for namespace in namespaces:
            Namespace.objects.update_or_create(name=namespace, defaults={"tenant": tenant})
    user_model = get_user_model()
    for demo in USERS:
        user = user_model.objects.filter(username=demo.username).first()
        if user is None:
            user = user_model.objects.create_user(demo.username, f"{demo.username}@example.com", DEMO_PASSWORD)
        if demo.tenant is None:
            user.is_superuser = user.is_staff = True
            user.save(update_fields=["is_superuser", "is_staff"])
        else:
            Membership.objects.update_or_create(user=user, tenant=tenants[demo.tenant], defaults={"role": demo.role})
    apply_documents(SYSTEM, _documents(DEMO_DIR / "queues.yaml"))
    apply_documents(SYSTEM, [with_enqueue_gate(doc) for doc in _documents(COOKBOOK_DIR / "12-scheduler-conf.yaml")])
    for filename, namespace in DEMO_JOBS:
        apply_documents(SYSTEM, _documents(COOKBOOK_DIR / filename), default_namespace=namespace)
    log.info("demo data created")
    return True
