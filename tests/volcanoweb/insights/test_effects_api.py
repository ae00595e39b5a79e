"""Audit entries linked to their effects: the recorded cycles against the same cycles without the change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from tests.volcanoweb.insights.scenario import cycle, small_queue_scenario, submit
from volcanoweb.audit.models import AuditEntry
from volcanoweb.jobs.models import PodGroup
from volcanoweb.queues import services as queue_services
from volcanoweb.scheduling import services as scheduling_services
from volcanoweb.tenancy.access import SYSTEM

ENQUEUE_ONLY = 'actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n'


@pytest.mark.django_db(transaction=True)
def test_raising_a_capability_lists_the_admission_it_caused(cluster: Any, cast: Any, client_for: Any) -> None:
    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    queue_services.apply_queue(
        SYSTEM, builders.queue_manifest("small", capability={"cpu": "8", "memory": "64Gi"}, allowed=("team-a",))
    )
    entry = AuditEntry.objects.filter(kind="Queue", object_key="small", action="update").latest("at")
    waiting = AuditEntry.objects.filter(kind="Queue", object_key="small").earliest("at")
    pending = client_for(cast.alice).get(f"/api/v1/audit/{entry.pk}/effects").json()
    assert pending["available"] is False  # no cycle ran since the change
    cycle(clock)
    assert PodGroup.objects.get(job__name="waiter").phase == "Inqueue"  # what the change did for real
    body = client_for(cast.alice).get(f"/api/v1/audit/{entry.pk}/effects").json()
    assert body["kind"] == "ChangeEffects"
    assert body["available"] is True
    assert body["admitted"] == ["team-a/waiter"]
    assert body["notAdmitted"] == []
    assert body["evictions"] == []
    assert "the queue as it was before the change" in body["how"]
    # the creation of the queue: without it, the holder's queue does not exist and nothing is admitted there
    assert client_for(cast.alice).get(f"/api/v1/audit/{waiting.pk}/effects").json()["available"] is True
    # tenant scoping: team-b does not see queue small
    assert client_for(cast.charlie).get(f"/api/v1/audit/{entry.pk}/effects").status_code == 404
    assert client_for(None).get(f"/api/v1/audit/{entry.pk}/effects").status_code == 401
    # the queue page shows the effect next to the change marker
    page = client_for(cast.alice).get("/queues/small/insights/")
    assert page.status_code == 200
    assert "admitted: team-a/waiter" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_scheduler_configuration_activation_is_compared_with_the_previous_one(
    cluster: Any, cast: Any, client_for: Any
) -> None:
    _, clock = cluster
    builders.make_queue("roomy", allowed=("team-a",))
    submit("blocked", "roomy", 2, "1")
    cycle(clock)  # built-in configuration: admitted; its controller creates the pods
    group = PodGroup.objects.get(job__name="blocked")
    assert group.phase == "Inqueue"
    scheduling_services.save_config(SYSTEM, ENQUEUE_ONLY)
    cycle(clock)  # enqueue only: the pods are never bound
    entry = AuditEntry.objects.filter(kind="SchedulerConfiguration").latest("at")
    body = client_for(cast.root, "token").get(f"/api/v1/audit/{entry.pk}/effects").json()
    assert body["available"] is True
    assert "configuration of the last kept cycle before the change" in body["how"]
    assert body["notBound"] == ["team-a/blocked"]  # the previous configuration would have bound the gang
    assert body["bound"] == []
    shares = {s["queue"]: s["change"] for s in body["shares"]}
    assert shares["roomy"]["cpu"] == "-2"
    # a tenant sees the effect with other tenants' names hidden
    builders.make_queue("b-queue", tenant="team-b")
    charlie = client_for(cast.charlie).get(f"/api/v1/audit/{entry.pk}/effects").json()
    assert charlie["notBound"] == ["(a job of another tenant)"]


@pytest.mark.django_db(transaction=True)
def test_effects_use_the_cycle_right_after_the_change_or_say_it_is_gone(
    cluster: Any, cast: Any, client_for: Any
) -> None:
    """Two changes a few cycles apart cite their own next cycles; once the first's next cycle is pruned, its
    effects say so (naming that cycle) instead of citing a later one."""
    from volcanoweb.insights.models import CycleInput

    _, clock = cluster
    small_queue_scenario(clock, finish=False)
    queue_services.apply_queue(SYSTEM, builders.queue_manifest("small", capability={"cpu": "6"}, allowed=("team-a",)))
    first = AuditEntry.objects.filter(kind="Queue", object_key="small", action="update").latest("at")
    first_cycle = cycle(clock)
    cycle(clock)
    queue_services.apply_queue(SYSTEM, builders.queue_manifest("small", capability={"cpu": "8"}, allowed=("team-a",)))
    second = AuditEntry.objects.filter(kind="Queue", object_key="small", action="update").latest("at")
    second_cycle = cycle(clock)
    client = client_for(cast.alice)
    one = client.get(f"/api/v1/audit/{first.pk}/effects").json()
    two = client.get(f"/api/v1/audit/{second.pk}/effects").json()
    assert one["available"] is True
    assert two["available"] is True
    assert one["cycle"] == first_cycle.pk
    assert two["cycle"] == second_cycle.pk
    CycleInput.objects.filter(run_id=first_cycle.pk).delete()  # pruned
    gone = client.get(f"/api/v1/audit/{first.pk}/effects").json()
    assert gone["available"] is False
    assert (
        gone["message"]
        == f"the input of cycle #{first_cycle.pk}, the first after this change, is no longer kept (pruned)"
    )
