"""Submit: the namespace follows the chosen template's queue, so applying the template succeeds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Job
from volcanoweb.tenancy.models import Namespace

pytestmark = pytest.mark.django_db
COOKBOOK = Path(__file__).resolve().parents[3] / "volcanoweb" / "demo" / "cookbook"
TEMPLATE = "07-ci-build-batch.yaml"  # queue: ci-cd


def _namespace_field(html: str) -> str:
    match = re.search(r'id="ns-input" name="namespace" value="([^"]*)"', html)
    assert match is not None
    return match.group(1)


@pytest.fixture
def ci_cd_of_team_b(world: Any) -> Any:
    """The template's queue ``ci-cd``, owned by team-b."""
    builders.make_queue("ci-cd", tenant="team-b")
    return world


def test_platform_admin_gets_the_namespace_of_the_templates_queue(ci_cd_of_team_b: Any, login: Any) -> None:
    Namespace.objects.filter(name="default").delete()  # as after a flush: the first namespace is team-a's
    client = login(ci_cd_of_team_b.cast.root)
    assert _namespace_field(client.get("/submit/").content.decode()) == "team-a"  # no template: unchanged
    page = client.get(f"/submit/?template={TEMPLATE}").content.decode()
    assert _namespace_field(page) == "team-b"
    loaded = client.get(f"/submit/templates/{TEMPLATE}")
    assert loaded["X-Default-Namespace"] == "team-b"  # the editor's script moves the field to it
    text = loaded.content.decode()
    refused = client.post("/submit/apply/", {"manifest": text, "namespace": "team-a"})
    assert refused.status_code == 422  # the bug: team-a may not use team-b's queue
    applied = client.post("/submit/apply/", {"manifest": text, "namespace": loaded["X-Default-Namespace"]})
    assert applied.status_code == 200, applied.content.decode()
    assert applied["HX-Redirect"].startswith("/jobs/team-b/")
    assert Job.objects.filter(namespace="team-b", queue_name="ci-cd").exists()


def test_an_empty_namespace_field_also_follows_the_template(ci_cd_of_team_b: Any, login: Any) -> None:
    Namespace.objects.filter(name="default").delete()
    client = login(ci_cd_of_team_b.cast.root)
    text = (COOKBOOK / TEMPLATE).read_text()
    assert 'data-dry-run="ok"' in client.post("/submit/validate/", {"manifest": text}).content.decode()
    assert client.post("/submit/apply/", {"manifest": text}).status_code == 200
    assert Job.objects.filter(namespace="team-b", queue_name="ci-cd").exists()


def test_the_queue_owners_namespace_is_preferred_to_a_tenantless_one(ci_cd_of_team_b: Any, login: Any) -> None:
    assert Namespace.objects.filter(name="default", tenant__isnull=True).exists()
    client = login(ci_cd_of_team_b.cast.root)
    assert client.get(f"/submit/templates/{TEMPLATE}")["X-Default-Namespace"] == "team-b"


def test_tenant_members_keep_their_namespace(ci_cd_of_team_b: Any, login: Any) -> None:
    client = login(ci_cd_of_team_b.cast.alice)
    # ci-cd belongs to team-b and is invisible to alice: nothing of team-b is suggested
    assert client.get(f"/submit/templates/{TEMPLATE}")["X-Default-Namespace"] == "team-a"
    assert _namespace_field(client.get(f"/submit/?template={TEMPLATE}").content.decode()) == "team-a"


def test_a_public_or_own_queue_keeps_the_current_namespace(world: Any, login: Any) -> None:
    builders.make_queue("ci-cd")  # public
    cast = world.cast
    for user, namespace in ((cast.alice, "team-a"), (cast.charlie, "team-b"), (cast.root, "default")):
        assert login(user).get(f"/submit/templates/{TEMPLATE}")["X-Default-Namespace"] == namespace, user


def test_a_template_queue_of_another_tenant_says_who_owns_it(world: Any, login: Any) -> None:
    """The page offers the cookbook's CronJob (queue data-processing): the user knows the queue exists."""
    builders.make_queue("data-processing", tenant="team-b")
    manifest = (COOKBOOK / "14-cronjob-daily-report.yaml").read_text()
    html = login(world.cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"})
    text = html.content.decode()
    assert "you cannot use queue data-processing (owned by tenant team-b)" in text
    assert 'queues.scheduling.volcano.sh "data-processing" not found' not in text


def test_other_queues_of_other_tenants_stay_not_found(world: Any, login: Any) -> None:
    manifest = (COOKBOOK / "07-ci-build-batch.yaml").read_text().replace("queue: ci-cd", "queue: team-b-q")
    text = login(world.cast.alice).post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"})
    body = text.content.decode()
    assert "not found" in body  # a name the page never showed: existence is not confirmed
    assert "owned by tenant" not in body
