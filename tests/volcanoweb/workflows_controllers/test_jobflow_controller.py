"""JobFlow controller: DAG order, stop on failure, retain/delete, status; job phases driven by hand.

Deviations from Volcano: docs/controllers.md, "JobFlow controller and admission".
"""

from __future__ import annotations

from typing import Any

import pytest

from volcanoweb.jobs.models import Event, Job, JobPhase
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.controllers.jobflow import CREATED_BY_JOBFLOW, CREATED_BY_JOBTEMPLATE, sync_jobflow
from volcanoweb.workflows.models import JobFlow, JobTemplate

from .conftest import NAMESPACE, owned_jobs, set_phase, utc

pytestmark = pytest.mark.django_db

NOW = utc(2026, 2, 1, 12, 0)
DIAMOND = [
    {"name": "a"},
    {"name": "b", "dependsOn": {"targets": ["a"]}},
    {"name": "c", "dependsOn": {"targets": ["a"]}},
    {"name": "d", "dependsOn": {"targets": ["b", "c"]}},
]


def job_spec() -> dict[str, Any]:
    return {
        "schedulerName": "volcano",
        "queue": "data-processing",
        "minAvailable": 1,
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [{"name": "step", "image": "busybox", "command": ["true"]}],
                        "restartPolicy": "Never",
                    }
                },
            }
        ],
    }


def make_flow(
    flows: list[dict[str, Any]], name: str = "diamond", retain: str | None = None, templates: list[str] | None = None
) -> JobFlow:
    for template in templates if templates is not None else [f["name"] for f in flows]:
        workflows.apply_jobtemplate(
            SYSTEM,
            {
                "apiVersion": "flow.volcano.sh/v1alpha1",
                "kind": "JobTemplate",
                "metadata": {"name": template},
                "spec": job_spec(),
            },
            NAMESPACE,
        )
    spec: dict[str, Any] = {"flows": flows}
    if retain:
        spec["jobRetainPolicy"] = retain
    workflows.apply_jobflow(
        SYSTEM,
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name}, "spec": spec},
        NAMESPACE,
        mode="create",
    )
    return JobFlow.objects.get(namespace=NAMESPACE, name=name)


def names(flow: JobFlow) -> list[str]:
    return sorted(job.name for job in owned_jobs(flow))


def sync(flow: JobFlow) -> JobFlow:
    assert sync_jobflow(flow.pk, NOW) is not None
    flow.refresh_from_db()
    return flow


def finish_flow_job(flow: JobFlow, step: str, phase: JobPhase = JobPhase.COMPLETED) -> None:
    set_phase(f"{flow.name}-{step}", phase, NOW)


def test_diamond_runs_each_job_after_its_targets(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND))
    assert names(flow) == ["diamond-a"]
    assert flow.phase == "Pending"
    assert flow.status["pendingJobs"] == ["diamond-a"]
    job = Job.objects.get(name="diamond-a")
    assert job.labels[CREATED_BY_JOBFLOW] == "reports.diamond"
    assert job.annotations[CREATED_BY_JOBTEMPLATE] == "reports.a"
    assert job.owner_references[0]["kind"] == "JobFlow"
    assert job.controller_uid == flow.uid
    assert job.queue_name == "data-processing"

    assert names(sync(flow)) == ["diamond-a"]  # idempotent
    set_phase("diamond-a", JobPhase.RUNNING, NOW)
    flow = sync(flow)
    assert flow.phase == "Running"
    assert names(flow) == ["diamond-a"]

    finish_flow_job(flow, "a")
    flow = sync(flow)
    assert names(flow) == ["diamond-a", "diamond-b", "diamond-c"]  # B and C together, D waits for both

    finish_flow_job(flow, "b")
    set_phase("diamond-c", JobPhase.RUNNING, NOW)
    flow = sync(flow)
    assert "diamond-d" not in names(flow)
    assert flow.status["completedJobs"] == ["diamond-a", "diamond-b"]
    assert flow.status["runningJobs"] == ["diamond-c"]

    finish_flow_job(flow, "c")
    flow = sync(flow)
    assert names(flow) == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]
    assert flow.phase == "Running"

    finish_flow_job(flow, "d")
    flow = sync(flow)
    assert flow.phase == "Succeed"
    assert flow.status["state"] == {"phase": "Succeed"}
    assert flow.status["completedJobs"] == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]
    assert set(flow.status["conditions"]) == {"diamond-a", "diamond-b", "diamond-c", "diamond-d"}
    history = {entry["name"]: entry for entry in flow.status["jobStatusList"]}
    assert [h["state"] for h in history["diamond-a"]["runningHistories"]] == ["Pending", "Running", "Completed"]
    assert [h["state"] for h in history["diamond-c"]["runningHistories"]] == ["Pending", "Running", "Completed"]
    assert Job.objects.count() == 4  # retain (the default) keeps them
    created = Event.objects.filter(involved_kind="JobFlow", involved_name="diamond", reason="Created")
    assert sorted(e.message for e in created) == [f"create a job named diamond-{s}!" for s in "abcd"]
    assert JobTemplate.objects.get(name="b").status["jobDependsOnList"] == ["diamond-b"]


def test_a_failure_stops_the_flow(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND))
    finish_flow_job(flow, "a")
    flow = sync(flow)
    flow = sync(flow)  # Pending → Running, as Volcano: one transition per sync
    assert flow.phase == "Running"
    finish_flow_job(flow, "b", JobPhase.FAILED)
    set_phase("diamond-c", JobPhase.RUNNING, NOW)
    flow = sync(flow)
    assert flow.phase == "Failed"
    assert flow.status["failedJobs"] == ["diamond-b"]
    finish_flow_job(flow, "c")
    for _ in range(3):
        flow = sync(flow)
    assert flow.phase == "Failed"
    assert names(flow) == ["diamond-a", "diamond-b", "diamond-c"]  # D is never created


def test_first_step_failing_creates_nothing_else(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND))
    finish_flow_job(flow, "a", JobPhase.FAILED)
    flow = sync(flow)
    assert flow.phase == "Failed"
    sync(flow)
    assert names(flow) == ["diamond-a"]


def test_terminated_job_fails_a_running_flow(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND[:2], name="pair"))
    set_phase("pair-a", JobPhase.RUNNING, NOW)
    flow = sync(flow)
    set_phase("pair-a", JobPhase.TERMINATED, NOW)
    flow = sync(flow)
    assert flow.phase == "Failed"
    assert flow.status["terminatedJobs"] == ["pair-a"]


def run_to_success(flow: JobFlow) -> JobFlow:
    for _ in range(10):
        flow = sync(flow)
        for job in owned_jobs(flow):
            if job.phase == JobPhase.PENDING:
                set_phase(job, JobPhase.COMPLETED, NOW)
        if flow.phase == "Succeed":
            return flow
    raise AssertionError(f"flow stuck in {flow.phase}: {flow.status}")


def test_retain_policy_keeps_jobs(namespace: object) -> None:
    flow = run_to_success(make_flow(DIAMOND, retain="retain"))
    sync(flow)
    assert names(flow) == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]


def test_delete_policy_removes_jobs_on_success(namespace: object) -> None:
    flow = run_to_success(make_flow(DIAMOND, retain="delete"))
    assert names(flow) == []
    assert flow.status["completedJobs"] == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]
    assert sync(flow).phase == "Succeed"


def test_missing_template_is_reported_and_retried(namespace: object) -> None:
    flow = sync(make_flow(DIAMOND[:2], name="pair", templates=["b"]))
    assert names(flow) == []
    assert Event.objects.filter(involved_name="pair", reason="JobTemplateNotFound", type="Warning").exists()
    workflows.apply_jobtemplate(
        SYSTEM,
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": "a"},
            "spec": job_spec(),
        },
        NAMESPACE,
    )
    assert names(sync(flow)) == ["pair-a"]
