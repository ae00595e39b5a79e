"""The Django admin: queue edits go through the services (hierarchical checks, audit), as do the others."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from tests.volcanoweb import builders
from volcanoweb.audit.models import AuditEntry
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy.models import ApiToken, Membership


def admin_client(cast: Any) -> Client:
    client = Client()
    client.force_login(cast.root)
    return client


def resource_fields(name: str, values: dict[str, Any] | None) -> dict[str, str]:
    """The admin's per-resource boxes (``name_0`` cpu, ``_1`` memory, ``_2`` GPU, ``_3`` other as JSON)."""
    values = dict(values or {})
    main = [values.pop(key, "") for key in ("cpu", "memory", "nvidia.com/gpu")]
    return {f"{name}_{i}": str(v) for i, v in enumerate([*main, json.dumps(values) if values else ""])}


def queue_form(queue: Queue, **changes: Any) -> dict[str, Any]:

    data = {
        "parent": queue.parent_id or "",
        "tenant": queue.tenant_id or "",
        "weight": queue.weight,
        "priority": queue.priority,
        "reclaimable": "on" if queue.reclaimable else "",
        **resource_fields("capability", queue.capability),
        **resource_fields("deserved", queue.deserved),
        **resource_fields("guarantee", queue.guarantee),
    }
    data.update(changes)
    return data


def test_every_admin_list_page_renders(cast: Any) -> None:
    client = admin_client(cast)
    builders.make_job("team-a")
    for page in (
        "tenancy/tenant",
        "tenancy/namespace",
        "tenancy/membership",
        "tenancy/apitoken",
        "queues/queue",
        "scheduling/schedulerprofile",
        "audit/auditentry",
        "jobs/job",
        "jobs/pod",
        "jobs/podgroup",
        "jobs/event",
    ):
        assert client.get(f"/admin/{page}/").status_code == 200, page
    assert client.get(f"/admin/queues/queue/{Queue.objects.get(name='default').pk}/change/").status_code == 200


def test_a_queue_edit_is_validated_against_the_hierarchy(cast: Any) -> None:
    builders.make_queue("eng", capability={"cpu": "10"})
    child = builders.make_queue("eng-ml", parent="eng", capability={"cpu": "4"})
    client = admin_client(cast)
    url = f"/admin/queues/queue/{child.pk}/change/"
    rejected = client.post(url, queue_form(child, **resource_fields("capability", {"cpu": "20"})))
    assert rejected.status_code == 200
    assert "exceeds the capability of its ancestor queue eng" in rejected.content.decode()
    assert Queue.objects.get(name="eng-ml").capability == {"cpu": "4"}
    accepted = client.post(
        url, queue_form(child, **resource_fields("capability", {"cpu": "8"}), **resource_fields("guarantee", {}))
    )
    assert accepted.status_code == 302, accepted.content.decode()[:2000]
    assert Queue.objects.get(name="eng-ml").capability == {"cpu": "8"}
    entry = AuditEntry.objects.filter(kind="Queue", object_key="eng-ml", action="update").get()
    assert (entry.source, entry.actor) == ("admin", cast.root)
    assert entry.before["spec"]["capability"] == {"cpu": "4"}
    assert entry.after["spec"]["capability"] == {"cpu": "8"}


def test_a_queue_can_be_added_in_the_admin(cast: Any) -> None:
    client = admin_client(cast)
    root = Queue.objects.get(name="root")
    data = queue_form(
        root,
        name="from-admin",
        parent=root.pk,
        reclaimable="on",
        **resource_fields("capability", {"cpu": "2", "ephemeral-storage": "10Gi"}),
        allowed_tenants=[cast.team_a.pk],
    )
    response = client.post("/admin/queues/queue/add/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    queue = Queue.objects.get(name="from-admin")
    assert list(queue.allowed_tenants.all()) == [cast.team_a]
    assert queue.capability == {"cpu": "2", "ephemeral-storage": "10Gi"}


def test_memberships_tokens_and_scheduler_versions_go_through_services(cast: Any) -> None:
    client = admin_client(cast)
    response = client.post(
        "/admin/tenancy/membership/add/", {"user": cast.charlie.pk, "tenant": cast.team_a.pk, "role": "viewer"}
    )
    assert response.status_code == 302
    assert Membership.objects.get(user=cast.charlie, tenant=cast.team_a).role == "viewer"
    assert AuditEntry.objects.filter(kind="Membership", source="admin").exists()
    response = client.post("/admin/tenancy/apitoken/add/", {"user": cast.bob.pk, "name": "from-admin"}, follow=True)
    assert "copy it now" in response.content.decode()
    assert ApiToken.objects.filter(user=cast.bob, name="from-admin").count() == 1
    bad = client.post("/admin/scheduling/schedulerprofile/add/", {"yaml": "actions: fly\n", "comment": "x"})
    assert bad.status_code == 200
    assert not SchedulerProfile.objects.exists()
    good = client.post(
        "/admin/scheduling/schedulerprofile/add/", {"yaml": "actions: enqueue, allocate\n", "comment": "ok"}
    )
    assert good.status_code == 302
    assert SchedulerProfile.objects.get().active


def test_queue_resources_are_per_resource_fields_with_clear_errors(cast: Any) -> None:
    client = admin_client(cast)
    queue = builders.make_queue("fields", capability={"cpu": "4", "memory": "8Gi"})
    page = client.get(f"/admin/queues/queue/{queue.pk}/change/").content.decode()
    assert 'name="capability_0" value="4"' in page  # CPU in its own box, not JSON in a one-line box
    assert 'name="capability_1" value="8Gi"' in page
    bad = client.post(
        f"/admin/queues/queue/{queue.pk}/change/",
        queue_form(queue, **resource_fields("capability", {"memory": "lots"})),
    )
    assert "Memory: &#x27;lots&#x27; is not a valid quantity" in bad.content.decode()
