"""The CronJob page: next runs, history (phase, start, finish), and Suspend / Resume / Run now."""

from __future__ import annotations

from typing import Any

import pytest

from tests.volcanoweb.builders import task
from tests.volcanoweb.workflows_controllers.conftest import set_phase
from volcanoweb.jobs.models import Job, JobPhase
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob

pytestmark = pytest.mark.django_db
PAGE = "/cronjobs/team-a/nightly/"
ACTION = "/cronjobs/team-a/nightly/action/"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def nightly(world: Any) -> CronJob:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"queue": "team-a-q", "tasks": [task()]}}},
    }
    workflows.apply_cronjob(SYSTEM, doc, "team-a", mode="create")
    return CronJob.objects.get(name="nightly")


def test_list_links_to_the_page_which_shows_next_runs_history_and_buttons(
    nightly: CronJob, world: Any, login: Any
) -> None:
    client = login(world.cast.bob)
    listing = client.get("/cronjobs/").content.decode()
    assert f'href="{PAGE}"' in listing
    ok = workflows.run_cronjob_now(SYSTEM, "team-a", "nightly")
    bad = workflows.run_cronjob_now(SYSTEM, "team-a", "nightly")
    set_phase(ok, JobPhase.COMPLETED, ok.created_at)
    Job.objects.filter(pk=bad.pk).update(phase=JobPhase.FAILED)
    page = client.get(PAGE).content.decode()
    assert "<h1>nightly</h1>" in page
    assert page.count("<time") >= 5  # next runs, starts and a finish
    for name in (ok.name, bad.name):
        assert f'href="/jobs/team-a/{name}/"' in page
    assert "Completed" in page
    assert "Failed" in page
    for verb in ("suspend", "run"):  # a scheduled CronJob: Suspend, not Resume (test_cronjob_actions.py)
        assert (
            f'<button type="submit" class="btn{" primary" if verb == "run" else ""}" name="action" value="{verb}"'
            in page
        )
    assert 'name="csrfmiddlewaretoken"' in page
    history = client.get(PAGE + "?fragment=history").content.decode()
    assert ok.name in history
    assert "<h1>" not in history
    assert "Last job" in client.get("/cronjobs/?fragment=table").content.decode()


def test_buttons_suspend_resume_and_run(nightly: CronJob, world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    response = client.post(ACTION, {"action": "suspend"}, **HTMX)
    assert response.status_code == 200
    assert response["HX-Trigger"] == "cronjob-changed"
    assert "Suspended team-a/nightly" in response.content.decode()
    assert CronJob.objects.get(pk=nightly.pk).suspend is True
    assert "none while suspended" in client.get(PAGE + "?fragment=summary").content.decode()
    assert client.post(ACTION, {"action": "resume"}, **HTMX).status_code == 200
    assert CronJob.objects.get(pk=nightly.pk).suspend is False
    ran = client.post(ACTION, {"action": "run"}, **HTMX)
    assert ran.status_code == 200
    job = Job.objects.get(controller_uid=nightly.uid)
    assert f"Started job {job.name}" in ran.content.decode()
    # Without htmx (a plain form post) it redirects back to the page.
    plain = client.post(ACTION, {"action": "suspend"})
    assert plain.status_code == 302
    assert plain["Location"] == PAGE
    assert client.post(ACTION, {"action": "explode"}, **HTMX).status_code == 400


def test_viewers_are_refused_and_see_no_buttons(nightly: CronJob, world: Any, login: Any) -> None:
    client = login(world.cast.victor)
    page = client.get(PAGE).content.decode()
    assert 'value="run"' not in page
    for verb in ("suspend", "run"):  # a scheduled CronJob: Suspend, not Resume (test_cronjob_actions.py)
        response = client.post(ACTION, {"action": verb}, **HTMX)
        assert response.status_code == 403
        assert 'role="alert"' in response.content.decode()
    assert Job.objects.filter(controller_uid=nightly.uid).count() == 0
    assert CronJob.objects.get(pk=nightly.pk).suspend is False


def test_other_tenants_get_404_and_actions_need_post(nightly: CronJob, world: Any, login: Any) -> None:
    charlie = login(world.cast.charlie)
    assert charlie.get(PAGE).status_code == 404
    assert charlie.post(ACTION, {"action": "run"}, **HTMX).status_code == 404
    assert login(world.cast.bob).get(ACTION).status_code == 405


def test_actions_need_the_csrf_token(nightly: CronJob, world: Any) -> None:
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(world.cast.bob)
    assert client.post(ACTION, {"action": "suspend"}, **HTMX).status_code == 403
    assert CronJob.objects.get(pk=nightly.pk).suspend is False
