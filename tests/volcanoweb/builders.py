"""Plain builder functions for web tests: users, tenants, queues, manifests (no factory library)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import User

from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.models import ALLOWED_TENANTS_ANNOTATION, Queue
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.tenancy.models import Membership, Namespace, Tenant

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The cookbook copy the product ships (demo data, Submit templates); tests never read outside the repository.
COOKBOOK = REPO_ROOT / "volcanoweb" / "demo" / "cookbook"
#: The queues the cookbook's jobs submit to (not defined in the cookbook itself).
COOKBOOK_JOB_QUEUES = ("ml-training", "data-processing", "ci-cd", "hpc")


def make_user(username: str, *, superuser: bool = False) -> User:
    """Return a user with password ``pw-<username>``."""
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.com", f"pw-{username}")
    return User.objects.create_user(username, f"{username}@example.com", f"pw-{username}")


def make_tenant(name: str, namespaces: tuple[str, ...] | None = None) -> Tenant:
    """Return a tenant owning the given namespaces (default: one named like the tenant)."""
    tenant = Tenant.objects.create(name=name, display_name=name.title())
    for namespace in namespaces or (name,):
        Namespace.objects.create(name=namespace, tenant=tenant)
    return tenant


def add_member(tenant: Tenant, user: User, role: str) -> Membership:
    """Give a user a role in a tenant."""
    return Membership.objects.create(tenant=tenant, user=user, role=role)


def queue_manifest(
    name: str,
    *,
    parent: str | None = None,
    weight: int | None = None,
    capability: dict[str, Any] | None = None,
    guarantee: dict[str, Any] | None = None,
    deserved: dict[str, Any] | None = None,
    allowed: tuple[str, ...] = (),
    tenant: str | None = None,
) -> dict[str, Any]:
    """Return a Queue manifest."""
    spec: dict[str, Any] = {}
    if parent:
        spec["parent"] = parent
    if weight is not None:
        spec["weight"] = weight
    if capability:
        spec["capability"] = capability
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    if deserved:
        spec["deserved"] = deserved
    annotations: dict[str, str] = {}
    if allowed:
        annotations[ALLOWED_TENANTS_ANNOTATION] = ",".join(allowed)
    if tenant:
        annotations["volcanoweb.io/tenant"] = tenant
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": metadata, "spec": spec}


def make_queue(name: str, **kwargs: Any) -> Queue:
    """Create a queue through the service, as a platform admin."""
    queue_services.apply_queue(SYSTEM, queue_manifest(name, **kwargs))
    return Queue.objects.get(name=name)


def task(
    name: str = "worker", replicas: int = 2, *, cpu: str = "1", memory: str = "1Gi", **extra: Any
) -> dict[str, Any]:
    """Return a task entry with one container."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container]}}, **extra}


def job_manifest(
    name: str = "train",
    *,
    namespace: str | None = None,
    queue: str | None = "default",
    tasks: list[dict[str, Any]] | None = None,
    **spec_fields: Any,
) -> dict[str, Any]:
    """Return a Volcano Job manifest (one 2-replica task by default)."""
    spec: dict[str, Any] = {"tasks": tasks if tasks is not None else [task()], **spec_fields}
    if queue is not None:
        spec["queue"] = queue
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": metadata, "spec": spec}


def make_job(namespace: str, name: str = "train", **kwargs: Any) -> Job:
    """Create a job through the service, as a platform admin."""
    job_services.apply_job(SYSTEM, job_manifest(name, namespace=namespace, **kwargs))
    return Job.objects.get(namespace=namespace, name=name)


def with_changes(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of ``doc`` with a dotted path (``spec.tasks.0.replicas``) set, or removed if value is ...

    ``...`` (Ellipsis) removes the key.
    """
    doc = copy.deepcopy(doc)
    parts = path.split(".")
    node: Any = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is Ellipsis:
        node.pop(last, None)
    else:
        node[last] = value
    return doc


def cookbook_files() -> list[Path]:
    """Return the cookbook's YAML files, sorted."""
    return sorted(COOKBOOK.glob("*.yaml"))


def cookbook_documents(filename: str) -> list[dict[str, Any]]:
    """Return the parsed documents of one cookbook file."""
    return [doc for doc in yaml.safe_load_all((COOKBOOK / filename).read_text()) if doc]


def to_yaml(*docs: dict[str, Any]) -> str:
    """Return documents as a multi-document YAML string."""
    return yaml.safe_dump_all(list(docs), sort_keys=False)
