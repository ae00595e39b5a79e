"""Run again on a finished job (a new job from the same spec), and a Submit dry run that says when an apply
would run nothing (issue 29, item 2)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.volcanoweb import builders
from volcanoweb.core.errors import Conflict
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Job
from volcanoweb.manifests import render

pytestmark = pytest.mark.django_db


def _finish(job: Job, phase: str = "Failed") -> None:
    Job.objects.filter(pk=job.pk).update(phase=phase)


def test_run_again_creates_a_new_job_from_the_same_spec_named_in_series(world: Any) -> None:
    _finish(world.job_a)
    first = job_services.run_again(builders.SYSTEM, "team-a", "train-a")
    assert (first.action, first.name) == ("created", "train-a-2")
    again = Job.objects.get(namespace="team-a", name="train-a-2")
    assert again.phase == "Pending"
    assert again.spec["tasks"] == Job.objects.get(pk=world.job_a.pk).spec["tasks"]
    assert again.annotations[job_services.RUN_OF_ANNOTATION] == "train-a"
    assert Job.objects.get(pk=world.job_a.pk).phase == "Failed"  # the finished job stays as it is
    _finish(again, "Completed")
    assert job_services.run_again(builders.SYSTEM, "team-a", "train-a-2").name == "train-a-3"  # same series
    assert job_services.run_again(builders.SYSTEM, "team-a", "train-a").name == "train-a-4"


def test_only_a_finished_job_runs_again(world: Any) -> None:
    with pytest.raises(Conflict, match="only a finished job"):
        job_services.run_again(builders.SYSTEM, "team-a", "train-a")  # Pending
    assert not Job.objects.filter(name="train-a-2").exists()


def test_the_job_page_runs_a_failed_job_again_and_says_so(world: Any, login: Any) -> None:
    _finish(world.job_a)
    client = login(world.cast.bob)
    actions = client.get("/jobs/team-a/train-a/?fragment=actions").content.decode()
    assert 'value="rerun"' in actions
    assert "Run again" in actions
    response = client.post("/jobs/team-a/train-a/action/", {"action": "rerun"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    assert response["HX-Redirect"] == "/jobs/team-a/train-a-2/"
    page = client.get("/jobs/team-a/train-a-2/").content.decode()
    assert "Started team-a/train-a-2, a new run of team-a/train-a (same spec)." in page
    # another tenant cannot
    assert login(world.cast.charlie).post("/jobs/team-a/train-a/action/", {"action": "rerun"}).status_code == 404
    # and a job that has not finished is refused, saying why
    refused = client.post("/jobs/team-a/train-a-2/action/", {"action": "rerun"})
    assert refused.status_code == 409
    assert "only a finished job" in refused.content.decode()


def test_a_message_follows_a_delete_from_the_job_page(world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    client.post("/jobs/team-a/train-a/action/", {"action": "delete"})
    assert "Deleted team-a/train-a." in client.get("/jobs/").content.decode()


def _manifest(job: Job) -> str:
    doc = render.job(job)
    doc.pop("status", None)
    doc["metadata"] = {"name": job.name, "namespace": job.namespace}
    return yaml.safe_dump(doc)


def test_the_dry_run_says_nothing_would_run_for_a_finished_job(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    _finish(world.job_a)
    job = Job.objects.get(pk=world.job_a.pk)
    html = client.post("/submit/validate/", {"manifest": _manifest(job), "namespace": "team-a"}).content.decode()
    assert "unchanged" in html
    assert "Nothing would run: team-a/train-a has finished (Failed)" in html
    assert "use Run again on its page" in html
    assert 'href="/jobs/team-a/train-a/"' in html
    assert "Would be admitted" not in html
    # a changed spec would update the finished job: nothing runs either
    changed = _manifest(job).replace("replicas: 2", "replicas: 3")
    assert changed != _manifest(job)
    html = client.post("/submit/validate/", {"manifest": changed, "namespace": "team-a"}).content.decode()
    assert "Nothing would run: team-a/train-a has finished (Failed)" in html
    assert "applying would update it" in html


def test_the_dry_run_says_an_unchanged_active_job_stays_as_it_is(world: Any, login: Any) -> None:
    job = Job.objects.get(pk=world.job_a.pk)
    html = login(world.cast.alice).post("/submit/validate/", {"manifest": _manifest(job), "namespace": "team-a"})
    text = html.content.decode()
    assert "Nothing would change: team-a/train-a already exists with this spec" in text
    assert "Would be admitted" not in text


def test_dashboard_actions_are_audited_as_the_dashboards(world: Any, login: Any, client_for: Any) -> None:
    from volcanoweb.audit.models import AuditEntry

    _finish(world.job_a)
    login(world.cast.bob).post("/jobs/team-a/train-a/action/", {"action": "rerun"})
    entry = AuditEntry.objects.get(kind="Job", action="create", object_key="team-a/train-a-2")
    assert (entry.source, entry.actor_name) == ("dashboard", "bob")
    # the API keeps its source
    api = client_for(world.cast.bob, "token")
    assert api.delete("/api/v1/namespaces/team-a/jobs/train-a-2").status_code == 200
    assert AuditEntry.objects.get(kind="Job", action="delete", object_key="team-a/train-a-2").source == "api"


def test_a_finished_job_offers_no_suggestions(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    assert "Compute suggestions" in client.get("/jobs/team-a/train-a/").content.decode()  # Pending
    _finish(world.job_a, "Completed")
    assert "Compute suggestions" not in client.get("/jobs/team-a/train-a/").content.decode()
