"""The queue editor: parsed units as you type, the preview runs Save's checks, the result lists every change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.dashboard.forms import unit_hint
from volcanoweb.queues.models import Queue

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "value", "text", "tone"),
    [
        ("memory", "64", "64 bytes \u2014 did you mean 64Gi?", "warn"),
        ("memory", "64Gi", "64 GiB", ""),
        ("memory", "1536Mi", "1.5 GiB", ""),
        ("cpu", "500m", "0.5 CPU cores (500 millicores)", ""),
        ("cpu", "16", "16 CPU cores", ""),
        ("nvidia.com/gpu", "4", "4 GPUs", ""),
        ("cpu", "lots", "'lots' is not a quantity (e.g. 16 or 500m)", "bad"),
    ],
)
def test_unit_hints(name: str, value: str, text: str, tone: str) -> None:
    assert unit_hint(name, value) == (text, tone)


def test_the_preview_shows_the_parsed_value_of_each_field(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    html = client.post(
        "/queues/team-a-q/preview/", {"weight": "2", "guarantee_memory": "64", "capability_cpu": "32"}
    ).content.decode()
    assert 'data-hint-for="guarantee_memory" class="unit-hint warn-text"' in html
    assert "64 bytes \u2014 did you mean 64Gi?" in html
    assert "32 CPU cores" in html
    form = client.get("/queues/team-a-q/edit/").content.decode()
    assert 'id="hint-capability_cpu"' in form  # the stored value's meaning, before any typing
    assert "32 CPU cores" in form


def test_the_preview_refuses_what_save_refuses(world: Any, login: Any) -> None:
    builders.make_queue("team-a-parent", tenant="team-a", guarantee={"cpu": "8"}, capability={"cpu": "16"})
    builders.make_queue("team-a-child", tenant="team-a", parent="team-a-parent")
    client = login(world.cast.alice)
    data = {"weight": "1", "guarantee_cpu": "12"}  # above the parent's guarantee of 8
    preview = client.post("/queues/team-a-child/preview/", data).content.decode()
    assert "data-preview-error" in preview
    assert "Save would refuse this change" in preview
    assert "What-if" not in preview
    saved = client.post("/queues/team-a-child/edit/", data)
    assert saved.status_code == 422
    assert Queue.objects.get(name="team-a-child").guarantee in ({}, None)


def test_a_valid_preview_writes_nothing(world: Any, login: Any) -> None:
    """(As the platform admin: team-a-q is team-a's top-level queue, whose share its tenant admin cannot set.)"""
    from volcanoweb.audit.models import AuditEntry

    entries = AuditEntry.objects.count()
    html = login(world.cast.root).post("/queues/team-a-q/preview/", {"weight": "7"}).content.decode()
    assert "What-if" in html
    assert Queue.objects.get(name="team-a-q").weight == 2  # Save's checks ran and were rolled back
    assert AuditEntry.objects.count() == entries


def test_the_saved_message_lists_every_changed_field(world: Any, login: Any) -> None:
    client = login(world.cast.root)
    html = client.post(
        "/queues/team-a-q/edit/", {"weight": "5", "guarantee_memory": "64Gi", "capability_cpu": "32"}
    ).content.decode()
    assert "weight 2 \u2192 5" in html
    assert "Memory guarantee none \u2192 64Gi" in html
    assert "CPU capability" not in html  # unchanged


def test_audit_shows_a_queue_updates_before_and_after(world: Any, login: Any) -> None:
    client = login(world.cast.root)
    client.post("/queues/team-a-q/edit/", {"weight": "6", "capability_cpu": "32"})
    html = client.get("/audit/?kind=Queue").content.decode()
    assert "weight 2 \u2192 6" in html
    kinds = client.get("/audit/").content.decode()
    assert ">Node<" in kinds
    assert ">JobTemplate<" in kinds


def test_the_preview_says_what_a_parents_weight_does_under_the_active_configuration(world: Any, login: Any) -> None:
    """Under the default (flat proportion) a parent's weight does nothing, and the preview says so; under
    hierarchical capacity the parent's own deserved is shown and the note says weight is not read."""
    from volcanoweb.scheduling import services as scheduling
    from volcanoweb.tenancy.access import access_for

    builders.make_queue("team-a-parent", tenant="team-a", deserved={"cpu": "8"}, capability={"cpu": "16"})
    builders.make_queue("team-a-child", tenant="team-a", parent="team-a-parent", deserved={"cpu": "4"})
    client = login(world.cast.root)
    flat = client.post("/queues/team-a-parent/preview/", {"weight": "5"}).content.decode()
    assert "proportion: a parent&#x27;s weight does nothing" in flat
    assert "data-parent-deserved" not in flat  # proportion gives parents no deserved of their own
    leaf = client.post("/queues/team-a-child/preview/", {"weight": "5"}).content.decode()
    assert "split among busy leaf queues in proportion to their weights" in leaf

    text = (
        'actions: "enqueue, allocate, reclaim"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
        "- plugins:\n  - name: drf\n  - name: predicates\n  - name: capacity\n    enableHierarchy: true\n"
    )
    scheduling.save_config(access_for(world.cast.root), text)
    nested = client.post("/queues/team-a-parent/preview/", {"weight": "5"}).content.decode()
    assert "capacity: weight is not read" in nested
    assert "a parent&#x27;s deserved and capability bound what its children together may use" in nested
    assert "proportion:" not in nested
    parent_row = nested[nested.index('data-preview-queue="team-a-parent"') :]
    assert "data-parent-deserved" in parent_row[: parent_row.index("</tr>")]
    assert ">8<" in parent_row[: parent_row.index("</tr>")]  # its spec.deserved, 8 cores
