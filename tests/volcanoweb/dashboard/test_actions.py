"""Writes from the dashboard go through the services: queue edit + preview, job commands, submit, config."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.volcanoweb import builders
from volcanoweb.jobs.models import Command, Job
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling.models import SchedulerProfile

pytestmark = pytest.mark.django_db
COOKBOOK = Path(__file__).resolve().parents[3] / "volcanoweb" / "demo" / "cookbook"


def test_tenant_admin_previews_then_saves_a_weight(world: Any, login: Any) -> None:
    """Below its top-level queue (team-a-q, weight 2, 32 CPUs); the top-level queue's share is the platform
    admin's (tests/volcanoweb/api/hostile/test_queue_escalation.py)."""
    builders.make_queue("team-a-child", tenant="team-a", parent="team-a-q")
    client = login(world.cast.alice)
    form = client.get("/queues/team-a-child/edit/")
    assert form.status_code == 200
    assert 'name="weight"' in form.content.decode()
    preview = client.post("/queues/team-a-child/preview/", {"weight": "2", "capability_cpu": "32"}).content.decode()
    assert 'class="changed"' in preview
    assert "team-b-q" not in preview  # other tenants' queues are summed, not named
    assert Queue.objects.get(name="team-a-child").weight == 1  # preview saves nothing
    saved = client.post("/queues/team-a-child/edit/", {"weight": "2", "capability_cpu": "32"})
    assert saved.status_code == 200
    assert saved["HX-Trigger"] == "queues-changed"
    queue = Queue.objects.get(name="team-a-child")
    assert queue.weight == 2
    assert queue.capability == {"cpu": "32"}
    assert "data-share-locked" not in form.content.decode()
    assert "data-share-locked" in client.get("/queues/team-a-q/edit/").content.decode()
    assert "data-share-locked" not in login(world.cast.root).get("/queues/team-a-q/edit/").content.decode()
    refused = client.post("/queues/team-a-q/edit/", {"weight": "6", "capability_cpu": "32"})
    assert refused.status_code == 422
    assert "set by a platform admin" in refused.content.decode()
    assert Queue.objects.get(name="team-a-q").weight == 2


def test_queue_edit_rejects_bad_values(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    response = client.post("/queues/team-a-q/edit/", {"weight": "0", "capability_cpu": "lots"})
    assert response.status_code == 422
    assert "not a valid quantity" in response.content.decode()
    preview = client.post(
        "/queues/team-a-q/preview/", {"weight": "2", "guarantee_cpu": "64", "capability_cpu": "32"}
    ).content.decode()
    assert "guarantee exceeds capability" in preview


def test_members_cannot_edit_queues(world: Any, login: Any) -> None:
    assert login(world.cast.bob).post("/queues/team-a-q/edit/", {"weight": "9"}).status_code == 403
    assert Queue.objects.get(name="team-a-q").weight == 2


def test_close_and_open_a_queue(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    client.post("/queues/team-a-q/state/", {"action": "close"})
    assert Queue.objects.get(name="team-a-q").state in ("Closed", "Closing")
    client.post("/queues/team-a-q/state/", {"action": "open"})
    assert Queue.objects.get(name="team-a-q").state == "Open"


def test_job_commands_and_delete(world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    response = client.post("/jobs/team-a/train-a/action/", {"action": "suspend"})
    assert response.status_code == 200
    assert "kills" in response.content.decode()
    assert Command.objects.filter(job=world.job_a, action="AbortJob").exists()
    client.post("/jobs/team-a/train-a/action/", {"action": "delete"})
    job = Job.objects.filter(pk=world.job_a.pk).first()
    assert job is None or job.deletion_timestamp is not None


def _set_phase(job: Job, phase: str, retry_count: int = 0) -> None:
    Job.objects.filter(pk=job.pk).update(phase=phase, status={**(job.status or {}), "retryCount": retry_count})


@pytest.mark.parametrize(
    ("phase", "offered"),
    [
        ("Pending", {"suspend", "restart", "delete"}),
        ("Running", {"suspend", "restart", "delete"}),
        ("Aborted", {"resume", "delete"}),
        ("Aborting", {"resume", "delete"}),
        ("Failed", {"rerun", "delete"}),
        ("Completed", {"rerun", "delete"}),
        ("Terminated", {"rerun", "delete"}),
        ("Restarting", {"delete"}),
    ],
)
def test_job_page_offers_only_the_commands_the_phase_accepts(
    world: Any, login: Any, phase: str, offered: set[str]
) -> None:
    _set_phase(world.job_a, phase)
    html = login(world.cast.bob).get("/jobs/team-a/train-a/?fragment=actions").content.decode()
    enabled = set(re.findall(r'name="action" value="(\w+)"', html))
    disabled = set(re.findall(r'data-unavailable="(\w+)"', html))
    assert enabled == offered
    assert disabled == {"suspend", "resume", "restart", "delete"} - offered
    for verb in disabled:
        assert f'id="why-{verb}"' in html  # each unavailable command says why


def test_refused_commands_queue_nothing(world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    _set_phase(world.job_a, "Failed")
    response = client.post("/jobs/team-a/train-a/action/", {"action": "resume"})
    assert response.status_code == 409
    assert "Failed job cannot be resumed" in response.content.decode()
    assert not Command.objects.exists()


def test_a_second_resume_is_refused_while_the_first_waits(world: Any, login: Any) -> None:
    client = login(world.cast.bob)
    _set_phase(world.job_a, "Aborted")
    assert client.post("/jobs/team-a/train-a/action/", {"action": "resume"}).status_code == 200
    second = client.post("/jobs/team-a/train-a/action/", {"action": "resume"})
    assert second.status_code == 409
    assert "waiting for the job controller" in second.content.decode()
    assert Command.objects.filter(action="ResumeJob").count() == 1


def test_resume_confirmation_shows_the_retry_it_uses(world: Any, login: Any) -> None:
    _set_phase(world.job_a, "Aborted", retry_count=0)
    html = login(world.cast.bob).get("/jobs/team-a/train-a/?fragment=actions").content.decode()
    assert "uses 1 retry: 2 of 3 left" in html
    _set_phase(world.job_a, "Aborted", retry_count=2)
    html = login(world.cast.bob).get("/jobs/team-a/train-a/?fragment=actions").content.decode()
    assert 'data-unavailable="resume"' in html
    assert "No retries left" in html


def test_bulk_actions_skip_jobs_whose_phase_refuses(world: Any, login: Any) -> None:
    other = builders.make_job("team-a", "done-a", queue="team-a-q")
    _set_phase(other, "Completed")
    response = login(world.cast.alice).post("/jobs/bulk/", {"action": "suspend", "ids": [world.job_a.pk, other.pk]})
    body = response.content.decode()
    assert "1 job done" in body
    assert "team-a/done-a: The job has finished (Completed)" in body
    assert set(Command.objects.values_list("target_name", flat=True)) == {"train-a"}


def test_viewers_cannot_act_on_jobs(world: Any, login: Any) -> None:
    response = login(world.cast.victor).post("/jobs/team-a/train-a/action/", {"action": "suspend"})
    assert response.status_code == 403
    assert not Command.objects.exists()


def test_bulk_actions_only_touch_visible_jobs(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    response = client.post("/jobs/bulk/", {"action": "suspend", "ids": [world.job_a.pk, world.job_b.pk]})
    assert response.status_code == 200
    assert set(Command.objects.values_list("target_name", flat=True)) == {"train-a"}


def test_job_page_explains_why_it_is_pending(world: Any, login: Any) -> None:
    page = login(world.cast.alice).get("/jobs/team-a/train-a/").content.decode()
    assert "Why is this job pending?" in page
    assert "queue team-a-q" in page


def test_submit_dry_run_reports_what_would_happen(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    manifest = (COOKBOOK / "07-ci-build-batch.yaml").read_text().replace("queue: ci-cd", "queue: team-a-q")
    ok = client.post("/submit/validate/", {"manifest": manifest, "namespace": "team-a"}).content.decode()
    assert 'data-dry-run="ok"' in ok
    assert "Would be" in ok
    assert not Job.objects.filter(namespace="team-a").exclude(name="train-a").exists()
    bad = client.post("/submit/validate/", {"manifest": "kind: Job\n  bad: [", "namespace": "team-a"}).content.decode()
    assert 'data-dry-run="error"' in bad
    assert "line" in bad


def test_submit_apply_creates_and_redirects(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    manifest = (COOKBOOK / "07-ci-build-batch.yaml").read_text().replace("queue: ci-cd", "queue: team-a-q")
    response = client.post("/submit/apply/", {"manifest": manifest, "namespace": "team-a"})
    assert response.status_code == 200
    job = Job.objects.exclude(name="train-a").get(namespace="team-a")
    assert response["HX-Redirect"] == f"/jobs/team-a/{job.name}/"


def test_submit_into_another_tenants_namespace_is_refused(world: Any, login: Any) -> None:
    manifest = (COOKBOOK / "07-ci-build-batch.yaml").read_text()
    response = login(world.cast.alice).post("/submit/apply/", {"manifest": manifest, "namespace": "team-b"})
    assert response.status_code == 422
    assert "forbidden" in response.content.decode()


def test_cookbook_templates_are_served(world: Any, login: Any) -> None:
    client = login(world.cast.alice)
    assert "pytorch" in client.get("/submit/templates/01-pytorch-distributed.yaml").content.decode()
    assert client.get("/submit/templates/..%2Fsettings.py").status_code == 404


def test_only_platform_admins_change_the_scheduler_config(world: Any, login: Any) -> None:
    text = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    denied = login(world.cast.alice).post("/scheduler/", {"yaml": text}).content.decode()
    assert "forbidden" in denied
    assert not SchedulerProfile.objects.exists()
    admin = login(world.cast.root)
    assert "Valid configuration" in admin.post("/scheduler/validate/", {"yaml": text}).content.decode()
    assert "alert bad" in admin.post("/scheduler/validate/", {"yaml": 'actions: "nope"\n'}).content.decode()
    admin.post("/scheduler/", {"yaml": text, "comment": "test"})
    assert SchedulerProfile.objects.get(active=True).comment == "test"


def test_scheduler_history_shows_each_versions_diff_and_rolls_back(world: Any, login: Any) -> None:
    """Each stored version shows its diff against the one before it; a rollback makes an earlier version
    active again (tenant admins cannot), and the result names both versions and what changed."""
    v1 = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    v2 = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    admin = login(world.cast.root)
    first = admin.post("/scheduler/", {"yaml": v1}).content.decode()
    assert "Saved version 1, now active" in first
    assert "was the built-in default" in first
    second = admin.post("/scheduler/", {"yaml": v2, "comment": "backfill"}).content.decode()
    assert "Saved version 2, now active" in second
    assert "(was v1)" in second
    assert '<span class="diff-add">+actions: &quot;enqueue, allocate, backfill&quot;</span>' in second
    assert '<span class="diff-del">-actions: &quot;enqueue, allocate&quot;</span>' in second
    same = admin.post("/scheduler/", {"yaml": v2}).content.decode()
    assert "Nothing saved" in same
    assert SchedulerProfile.objects.count() == 2
    page = admin.get("/scheduler/").content.decode()
    assert 'aria-label="Roll back to v1"' in page
    assert 'aria-label="Roll back to v2"' not in page
    assert "Changes from v1" in page
    assert "Changes from built-in" in page
    denied = login(world.cast.alice).post("/scheduler/", {"rollback": "1"}).content.decode()
    assert "forbidden" in denied
    assert SchedulerProfile.objects.get(active=True).version == 2
    done = admin.post("/scheduler/", {"rollback": "1"}).content.decode()
    assert "Version 1 is active again" in done
    assert "replacing v2" in done
    assert SchedulerProfile.objects.get(active=True).version == 1
    assert '<span class="diff-del">-actions: &quot;enqueue, allocate, backfill&quot;</span>' in done
    missing = admin.post("/scheduler/", {"rollback": "9"}).content.decode()
    assert "alert bad" in missing
    assert SchedulerProfile.objects.get(active=True).version == 1
    assert "Choose a stored version" in admin.post("/scheduler/", {"rollback": "x"}).content.decode()


def test_failure_injection_is_for_platform_admins(world: Any, login: Any) -> None:
    assert login(world.cast.alice).post("/nodes/node-0/inject/", {"action": "fail"}).status_code == 403


def test_the_config_check_shows_what_volcano_would_ignore(world: Any, login: Any) -> None:
    text = (
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: sla\n    arguments:\n      sla-waiting-time: 1\n'
    )
    html = login(world.cast.root).post("/scheduler/validate/", {"yaml": text}).content.decode()
    assert "Valid configuration" in html
    assert "data-config-warnings" in html
    assert "sla-waiting-time: expected a string, got 1; ignored: no default waiting time" in html
