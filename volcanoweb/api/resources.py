"""The namespaced resources the API serves, with their filters and orderings (a table, no logic)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Job, Pod, PodGroup, ResourceQuota
from volcanoweb.manifests import parse, render
from volcanoweb.manifests.parse import KindInfo
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

_COMMON_ORDER = {"name": "name", "namespace": "namespace", "created": "created_at", "updated": "updated_at"}


@dataclass(frozen=True)
class Resource:
    """How one namespaced kind is listed, rendered, applied and deleted."""

    info: KindInfo
    model: type[Any]
    render: Callable[[Any], dict[str, Any]]
    apply: Callable[..., Any]
    delete: Callable[..., Any]
    filters: dict[str, str] = field(default_factory=dict)
    ordering: dict[str, str] = field(default_factory=dict)
    text_fields: tuple[str, ...] = ("name",)


def _delete_workflow(kind: str) -> Callable[..., Any]:
    def delete(access: Any, namespace: str, name: str) -> Any:
        return workflows.delete_workflow_object(access, kind, namespace, name)

    return delete


NAMESPACED: dict[str, Resource] = {
    "jobs": Resource(
        parse.JOB,
        Job,
        render.job,
        jobs.apply_job,
        jobs.delete_job,
        filters={"queue": "queue_name", "phase": "phase", "priorityClassName": "priority_class_name"},
        ordering={**_COMMON_ORDER, "phase": "phase", "queue": "queue_name", "minAvailable": "min_available"},
        text_fields=("name", "queue_name"),
    ),
    "podgroups": Resource(
        parse.PODGROUP,
        PodGroup,
        render.podgroup,
        jobs.apply_podgroup,
        jobs.delete_podgroup,
        filters={"queue": "queue_name", "phase": "phase"},
        ordering={**_COMMON_ORDER, "phase": "phase", "queue": "queue_name", "minMember": "min_member"},
    ),
    "pods": Resource(
        parse.POD,
        Pod,
        render.pod,
        jobs.apply_pod,
        jobs.delete_pod,
        filters={
            "phase": "phase",
            "node": "node_name",
            "job": "job__name",
            "task": "task_name",
            "podgroup": "group_name",
        },
        ordering={**_COMMON_ORDER, "phase": "phase", "node": "node_name"},
        text_fields=("name", "node_name"),
    ),
    "resourcequotas": Resource(
        parse.RESOURCEQUOTA,
        ResourceQuota,
        render.resourcequota,
        jobs.apply_resourcequota,
        jobs.delete_resourcequota,
        ordering=dict(_COMMON_ORDER),
    ),
    "cronjobs": Resource(
        parse.CRONJOB,
        CronJob,
        render.cronjob,
        workflows.apply_cronjob,
        _delete_workflow("CronJob"),
        ordering=dict(_COMMON_ORDER),
    ),
    "jobflows": Resource(
        parse.JOBFLOW,
        JobFlow,
        render.jobflow,
        workflows.apply_jobflow,
        _delete_workflow("JobFlow"),
        filters={"phase": "phase"},
        ordering={**_COMMON_ORDER, "phase": "phase"},
    ),
    "jobtemplates": Resource(
        parse.JOBTEMPLATE,
        JobTemplate,
        render.jobtemplate,
        workflows.apply_jobtemplate,
        _delete_workflow("JobTemplate"),
        ordering=dict(_COMMON_ORDER),
    ),
}
