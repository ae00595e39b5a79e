"""A table of invalid manifests: each Volcano admission rule and each of ours answers 400 (or 403) with the
right field and message, and the database is left unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.volcanoweb import builders
from tests.volcanoweb.builders import job_manifest, queue_manifest, task, to_yaml, with_changes
from tests.volcanoweb.conftest import Cast, build_cast, module_data, post_yaml
from volcanoweb.audit.models import AuditEntry
from volcanoweb.jobs.models import Job, Pod, PodGroup, PriorityClass, ResourceQuota, Task
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.models import Queue
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

MODELS = (
    Job,
    Task,
    Pod,
    PodGroup,
    Queue,
    PriorityClass,
    ResourceQuota,
    CronJob,
    JobFlow,
    JobTemplate,
    SchedulerProfile,
    AuditEntry,
)


@dataclass(frozen=True)
class Case:
    """One invalid request: who sends which body, and the expected status, field and message."""

    id: str
    body: Callable[[], str]
    field: str | None
    message: str
    status: int = 400
    user: str = "alice"


def job(**spec: Any) -> Callable[[], str]:
    """A team-a job in the open ml-training queue, with spec fields replaced."""
    return lambda: to_yaml(job_manifest(namespace="team-a", **{"queue": "ml-training", **spec}))


def job_with(path: str, value: Any, **spec: Any) -> Callable[[], str]:
    return lambda: to_yaml(
        with_changes(job_manifest(namespace="team-a", **{"queue": "ml-training", **spec}), path, value)
    )


def doc(document: dict[str, Any]) -> Callable[[], str]:
    return lambda: to_yaml(document)


def text(body: str) -> Callable[[], str]:
    return lambda: body


def policies(*items: dict[str, Any]) -> Callable[[], str]:
    return job(policies=list(items))


def cron(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    base = {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"queue": "ml-training", "tasks": [task()]}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {**base, **spec},
    }


def podgroup(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "team-a"},
        "spec": {"minMember": 1, **spec},
    }


def jobflow(flows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "flow", "namespace": "team-a"},
        "spec": {"flows": flows},
    }


def priority_class(name: str, value: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pod(annotations: dict[str, str] | None = None, containers: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano"}
    if containers:
        spec["containers"] = [{"name": "c", "image": "busybox"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", "annotations": annotations or {}},
        "spec": spec,
    }


DAG_CYCLE = [task("a", 1, dependsOn={"name": ["b"]}), task("b", 1, dependsOn={"name": ["a"]})]
POLICY_SUFFIX = "valid events are ["

CASES = [
    # --- Volcano Job admission (the messages of its validating webhook and of its ValidatingAdmissionPolicies)
    Case("no-tasks", job(tasks=[]), "spec.tasks", "No task specified in job spec"),
    Case(
        "task-minavailable-gt-replicas",
        job(tasks=[task(replicas=2, minAvailable=3)]),
        "spec.tasks[0].minAvailable",
        "'minAvailable' is greater than 'replicas' in task: worker, job: train",
    ),
    Case("duplicate-task-name", job(tasks=[task(), task()]), "spec.tasks[1].name", "duplicated task name worker"),
    Case(
        "job-minavailable-gt-total",
        job(minAvailable=5),
        "spec.minAvailable",
        "job 'minAvailable' should not be greater than total replicas in tasks",
    ),
    Case("negative-minavailable", job(minAvailable=-1), "spec.minAvailable", "job 'minAvailable' must be >= 0"),
    Case("negative-maxretry", job(maxRetry=-2), "spec.maxRetry", "'maxRetry' cannot be less than zero"),
    Case(
        "negative-ttl",
        job(ttlSecondsAfterFinished=-5),
        "spec.ttlSecondsAfterFinished",
        "'ttlSecondsAfterFinished' cannot be less than zero",
    ),
    Case(
        "negative-replicas", job(tasks=[task(replicas=-1)]), "spec.tasks[0].replicas", "'replicas' < 0 in task: worker"
    ),
    Case(
        "policy-event-and-exitcode",
        policies({"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}),
        "spec.policies[0]",
        "must not specify event and exitCode simultaneously " + POLICY_SUFFIX,
    ),
    Case(
        "policy-neither",
        policies({"action": "RestartJob"}),
        "spec.policies[0]",
        "either event and exitCode should be specified",
    ),
    Case(
        "policy-internal-event",
        policies({"event": "PodRunning", "action": "RestartJob"}),
        "spec.policies[0].event",
        'Invalid value: "PodRunning": invalid policy event',
    ),
    Case(
        "policy-internal-action",
        policies({"event": "PodFailed", "action": "SyncJob"}),
        "spec.policies[0].action",
        'Invalid value: "SyncJob": invalid policy action',
    ),
    Case(
        "policy-duplicate-event",
        policies({"event": "PodFailed", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}),
        "spec.policies[1].event",
        "duplicate event PodFailed  across different policy",
    ),
    Case(
        "policy-timeout-not-a-duration",
        policies({"event": "PodPending", "action": "RestartJob", "timeout": "soon"}),
        "spec.policies[0].timeout",
        'Invalid value: "soon": must be a duration such as 10m or 1h30m',
    ),
    Case(
        "policy-timeout-bare-number",
        policies({"event": "PodPending", "action": "RestartJob", "timeout": "30"}),
        "spec.policies[0].timeout",
        'Invalid value: "30": must be a duration such as 10m or 1h30m',
    ),
    Case(
        "policy-timeout-negative",
        policies({"event": "PodPending", "action": "RestartJob", "timeout": "-1m"}),
        "spec.policies[0].timeout",
        'Invalid value: "-1m": must be a duration such as 10m or 1h30m',
    ),
    Case(
        "policy-exitcode-zero",
        policies({"exitCode": 0, "action": "RestartJob"}),
        "spec.policies[0].exitCode",
        "0 is not a valid error code",
    ),
    Case(
        "policy-duplicate-exitcode",
        policies({"exitCode": 137, "action": "RestartJob"}, {"exitCode": 137, "action": "AbortJob"}),
        "spec.policies[1].exitCode",
        "duplicate exitCode 137",
    ),
    Case(
        "policy-star-with-others",
        policies({"event": "*", "action": "RestartJob"}, {"event": "PodEvicted", "action": "AbortJob"}),
        "spec.policies",
        "if there's * here, no other policy should be here",
    ),
    Case(
        "task-policy-invalid",
        job(tasks=[task(policies=[{"event": "OutOfSync", "action": "RestartJob"}])]),
        "spec.tasks[0].policies[0].event",
        "invalid policy event",
    ),
    Case(
        "unknown-plugin",
        job(plugins={"tensorboard": []}),
        "spec.plugins.tensorboard",
        "unable to find job plugin: tensorboard",
    ),
    Case(
        "mpi-master-missing",
        job(plugins={"mpi": ["--master=launcher"]}),
        "spec.plugins.mpi",
        "The specified mpi master task was not found",
    ),
    Case(
        "volume-mountpath-missing",
        job(volumes=[{"volumeClaimName": "data"}]),
        "spec.volumes[0].mountPath",
        "mountPath is required",
    ),
    Case(
        "volume-duplicate-mountpath",
        job(volumes=[{"mountPath": "/d", "volumeClaimName": "a"}, {"mountPath": "/d", "volumeClaimName": "b"}]),
        "spec.volumes[1].mountPath",
        "duplicated mountPath: /d",
    ),
    Case(
        "volume-no-claim",
        job(volumes=[{"mountPath": "/d"}]),
        "spec.volumes[0]",
        "either VolumeClaim or VolumeClaimName must be specified",
    ),
    Case("depends-on-cycle", job(tasks=DAG_CYCLE), "spec.tasks", "doesn't form a directed acyclic graph(DAG)"),
    Case(
        "depends-on-unknown-task",
        job(tasks=[task("a", 1, dependsOn={"name": ["ghost"]})]),
        "spec.tasks",
        "directed acyclic graph(DAG)",
    ),
    Case(
        "job-name-invalid",
        job_with(
            "metadata.name",
            "Train_Job",
        ),
        "metadata.name",
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters",
    ),
    Case("task-name-invalid", job(tasks=[task("Worker_1")]), "spec.tasks[0].name", "a lowercase RFC 1123 label"),
    Case(
        "pod-name-too-long",
        job_with("metadata.name", "j" * 60),
        "spec.tasks[0].name",
        "create pod with name " + "j" * 60 + "-worker-0 validate failed",
    ),
    Case(
        "topology-fractional-cpu",
        job(tasks=[task(cpu="1500m", topologyPolicy="single-numa-node")]),
        "spec.tasks[0].template.spec.containers[0].resources",
        "the cpu request isn't an integer in spec.task[0] container[0].",
    ),
    Case(
        "partition-replicas-mismatch",
        job(tasks=[task(replicas=5, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})]),
        "spec.tasks[0].replicas",
        "'Replicas' are not equal to TotalPartitions*PartitionSize in task: worker, job: train",
    ),
    Case(
        "network-topology-both-tiers",
        job(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}),
        "spec.networkTopology",
        "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
    ),
    Case(
        "queue-not-found",
        job(queue="nowhere"),
        "spec.queue",
        'unable to find job queue: queues.scheduling.volcano.sh "nowhere" not found',
    ),
    Case(
        "queue-closed",
        job(queue="closed-q"),
        "spec.queue",
        "can only submit job to queue with state `Open`, queue `closed-q` status is `Closed`",
    ),
    Case("queue-root", job(queue="root"), "spec.queue", "can not submit job to root queue"),
    Case(
        "queue-not-leaf",
        job(queue="parent-q"),
        "spec.queue",
        "can only submit job to leaf queue, queue `parent-q` has 1 child queues",
    ),
    # --- ours: tenancy, sizes, references, types
    Case(
        "queue-not-open-to-tenant",
        job(queue="team-b-only"),
        "spec.queue",
        "queue `team-b-only` is not open to tenant `team-a`",
        user="root",
    ),
    Case(
        "queue-of-other-tenant-is-invisible",
        job(queue="team-b-only"),
        "spec.queue",
        'unable to find job queue: queues.scheduling.volcano.sh "team-b-only" not found',
    ),
    Case(
        "namespace-of-other-tenant",
        job_with("metadata.namespace", "team-b"),
        None,
        'cannot create resource "jobs" in API group "batch.volcano.sh" in the namespace "team-b"',
        status=403,
    ),
    Case("viewer-cannot-create", job(), None, 'User "victor" cannot create resource "jobs"', status=403, user="victor"),
    Case(
        "unknown-priority-class",
        job(priorityClassName="gold"),
        "spec.priorityClassName",
        "no PriorityClass with name gold was found",
    ),
    Case(
        "too-many-replicas", job(tasks=[task(replicas=20000)]), "spec.tasks[0].replicas", "must be no more than 10000"
    ),
    Case(
        "container-without-image",
        job_with("spec.tasks.0.template.spec.containers.0.image", ...),
        "spec.tasks[0].template.spec.containers[0].image",
        "Required value",
    ),
    Case(
        "bad-quantity",
        job(tasks=[task(cpu="lots")]),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        'Invalid value: "lots": quantities must match',
    ),
    Case(
        "requests-above-limits",
        job_with("spec.tasks.0.template.spec.containers.0.resources.limits", {"cpu": "500m"}),
        "spec.tasks[0].template.spec.containers[0].resources.requests",
        "must be less than or equal to cpu limit of 500m",
    ),
    Case(
        "wrong-type-replicas",
        job(tasks=[task(replicas="four")]),
        "spec.tasks[0].replicas",
        "spec.tasks[0].replicas in body must be of type integer",
    ),
    Case("wrong-type-tasks", job(tasks={"worker": 1}), "spec.tasks", "spec.tasks in body must be of type array"),
    Case(
        "wrong-type-spec",
        doc(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "x", "namespace": "team-a"},
                "spec": ["tasks"],
            }
        ),
        "spec",
        "spec in body must be of type object",
    ),
    Case("missing-name", job_with("metadata.name", ...), "metadata.name", "Required value"),
    Case(
        "bad-label-value",
        job_with("metadata.labels", {"app": "no spaces allowed"}),
        "metadata.labels.app",
        "a valid label must be an empty string",
    ),
    # --- Queue admission (1.9.4), as the platform admin
    Case(
        "queue-guarantee-above-capability",
        doc(queue_manifest("q1", capability={"cpu": "4"}, guarantee={"cpu": "8"})),
        "spec.guarantee.resource",
        "guarantee[cpu]=8 must be <= capability[cpu]=4",
        user="root",
    ),
    Case(
        "queue-deserved-above-capability",
        doc(queue_manifest("q1", capability={"cpu": "4"}, deserved={"cpu": "6"})),
        "spec.deserved",
        "deserved[cpu]=6 must be <= capability[cpu]=4",
        user="root",
    ),
    Case(
        "queue-deserved-below-guarantee",
        doc(queue_manifest("q1", deserved={"cpu": "2"}, guarantee={"cpu": "3"})),
        "spec.deserved",
        "deserved[cpu]=2 must be >= guarantee[cpu]=3",
        user="root",
    ),
    Case(
        "queue-weight-too-big",
        doc(queue_manifest("q1", weight=70000)),
        "spec.weight",
        "should be between 1 and 65535",
        user="root",
    ),
    Case(
        "queue-negative-quantity",
        doc(queue_manifest("q1", capability={"cpu": "-1"})),
        "spec.capability[cpu]",
        "must be greater than or equal to 0",
        user="root",
    ),
    Case(
        "queue-own-parent",
        doc(queue_manifest("q1", parent="q1")),
        "spec.parent",
        "queue q1 cannot use itself as parent",
        user="root",
    ),
    Case(
        "queue-parent-missing",
        doc(queue_manifest("q1", parent="ghost")),
        "spec.parent",
        'failed to get parent queue of queue q1: queues.scheduling.volcano.sh "ghost" not found',
        user="root",
    ),
    Case(
        "queue-capability-above-ancestor",
        doc(queue_manifest("eng-ml", parent="eng", capability={"cpu": "20"})),
        "spec.capability[cpu]",
        "queue eng-ml capability[cpu]=20 exceeds the capability of its ancestor queue eng (10)",
        user="root",
    ),
    Case(
        "queue-children-guarantee-above-parent",
        doc(queue_manifest("eng-ml", parent="eng", guarantee={"cpu": "6"})),
        "spec.guarantee.resource",
        "the sum of guarantee of the child queues of eng {cpu: 6} exceeds the guarantee of eng {cpu: 4}",
        user="root",
    ),
    Case(
        "queue-too-deep",
        doc(queue_manifest("l6", parent="l5")),
        "spec.parent",
        "queue l6 exceeds the maximum allowed depth of 5",
        user="root",
    ),
    Case(
        "queue-hierarchy-annotations",
        doc(
            with_changes(
                queue_manifest("q1"),
                "metadata.annotations",
                {"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1"},
            )
        ),
        "metadata.annotations.volcano.sh/hierarchy",
        "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights",
        user="root",
    ),
    Case(
        "queue-bad-state",
        doc(with_changes(queue_manifest("q1"), "status", {"state": "Paused"})),
        "status.state",
        "queue state must be in [Open Closed]",
        user="root",
    ),
    Case(
        "root-resources-immutable",
        doc(queue_manifest("root", capability={"cpu": "1"})),
        "spec",
        "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
        user="root",
    ),
    Case(
        "tenant-admin-cannot-add-top-level-queue",
        doc(queue_manifest("alices")),
        None,
        'User "alice" cannot create resource "queues"',
        status=403,
    ),
    # --- PodGroup (1.9.5)
    Case(
        "podgroup-queue-closed",
        doc(podgroup(queue="closed-q")),
        "spec.queue",
        "can only submit PodGroup to queue with state `Open`, queue `closed-q` status is `Closed`.",
    ),
    Case(
        "podgroup-queue-missing",
        doc(podgroup(queue="ghost")),
        "spec.queue",
        'unable to find queue: queues.scheduling.volcano.sh "ghost" not found',
    ),
    Case(
        "podgroup-negative-minmember",
        doc(podgroup(minMember=-1)),
        "spec.minMember",
        "should be greater than or equal to 0",
    ),
    Case(
        "podgroup-subgroup-size-zero",
        doc(podgroup(subGroupPolicy=[{"name": "w", "subGroupSize": 0, "matchLabelKeys": ["volcano.sh/task-spec"]}])),
        "spec.subGroupPolicy[0].subGroupSize",
        "should be greater than or equal to 1",
    ),
    Case(
        "podgroup-subgroup-negative-min",
        doc(podgroup(subGroupPolicy=[{"name": "w", "minSubGroups": -1, "matchLabelKeys": ["volcano.sh/task-spec"]}])),
        "spec.subGroupPolicy[0].minSubGroups",
        "should be greater than or equal to 0",
    ),
    # --- CronJob (1.9.7)
    Case("cron-empty-schedule", doc(cron(schedule="")), "spec.schedule", "schedule is required, but got empty"),
    Case(
        "cron-invalid-schedule",
        doc(cron(schedule="61 * * * *")),
        "spec.schedule",
        "schedule is not a valid cron expression",
    ),
    Case(
        "cron-tz-in-schedule",
        doc(cron(schedule="TZ=UTC 0 2 * * *")),
        "spec.schedule",
        "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field",
    ),
    Case(
        "cron-empty-timezone",
        doc(cron(timeZone="")),
        "spec.timeZone",
        "timeZone must be nil or non-empty string, got empty string",
    ),
    Case(
        "cron-local-timezone",
        doc(cron(timeZone="Local")),
        "spec.timeZone",
        "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones",
    ),
    Case("cron-unknown-timezone", doc(cron(timeZone="Mars/Olympus_Mons")), "spec.timeZone", "invalid timeZone"),
    Case(
        "cron-name-too-long",
        doc(cron(name="c" * 53)),
        "metadata.name",
        "cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)",
    ),
    Case(
        "cron-invalid-job-template",
        doc(cron(jobTemplate={"spec": {"tasks": []}})),
        "spec.jobTemplate.spec.tasks",
        "No task specified in job spec",
    ),
    # --- JobFlow (1.9.8)
    Case(
        "jobflow-undefined-target",
        doc(jobflow([{"name": "a", "dependsOn": {"targets": ["c"]}}])),
        "spec.flows",
        "jobflow Flow is not DAG: vertex is not defined: c",
    ),
    Case(
        "jobflow-cycle",
        doc(jobflow([{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}])),
        "spec.flows",
        "jobflow Flow is not DAG",
    ),
    # --- PriorityClass and Pod
    Case(
        "priorityclass-system-prefix",
        doc(priority_class("system-mine", 10)),
        "metadata.name",
        "priority class names with 'system-' prefix are reserved",
        user="root",
    ),
    Case(
        "priorityclass-value-too-big",
        doc(priority_class("huge", 2_000_000_000)),
        "value",
        "maximum allowed value of a user defined priority is 1000000000",
        user="root",
    ),
    Case(
        "priorityclass-by-tenant-admin",
        doc(priority_class("mine", 10)),
        None,
        'cannot create resource "priorityclasses"',
        status=403,
    ),
    Case(
        "pod-jdb-both",
        doc(pod({"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"})),
        "metadata.annotations",
        "not allow configure multiple annotations",
    ),
    Case(
        "pod-jdb-bad-percentage",
        doc(pod({"volcano.sh/jdb-min-available": "150%"})),
        "metadata.annotations.volcano.sh/jdb-min-available",
        "must be a valid integer or percentage between 1% and 99%",
    ),
    Case("pod-without-containers", doc(pod(containers=False)), "spec.containers", "Required value"),
    # --- parsing, kinds, sizes
    Case("malformed-yaml", text("apiVersion: v1\nkind: [Job\n"), None, "cannot parse YAML"),
    Case(
        "malformed-json", text('{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",'), None, "cannot parse JSON"
    ),
    Case(
        "unsupported-kind",
        doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}),
        "kind",
        'Unsupported value: "Deployment" in "apps/v1"',
    ),
    Case("missing-kind", doc({"apiVersion": "v1", "metadata": {"name": "x"}}), "kind", "Required value"),
    Case("not-a-mapping", text("- just\n- a list\n"), None, "expected a mapping"),
    Case("empty-body", text("---\n"), None, "the manifest contains no objects"),
    Case(
        "oversized", lambda: "# " + "x" * (settings.MAX_MANIFEST_BYTES + 10) + "\n", None, "the manifest is too large"
    ),
    Case(
        "unquoted-date",
        text("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: d}\nspec: {startedAt: 2026-01-01}\n"),
        None,
        "quote dates",
    ),
    Case(
        "atomic-multi-document",
        lambda: to_yaml(queue_manifest("new-q"), job_manifest(namespace="team-a", queue="ml-training", tasks=[])),
        None,
        'document 2: Job.batch.volcano.sh "train" is invalid',
        user="root",
    ),
    Case(
        "scheduler-config-unknown-plugin",
        text("actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: no-such-plugin\n"),
        "tiers[0].plugins[0].name",
        "unknown plugin 'no-such-plugin'",
        user="root",
    ),
    Case(
        "job-anti-affinity-without-topology-key",
        job_with(
            "spec.tasks.0.template.spec.affinity",
            {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}},
        ),
        "spec.tasks[0].template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".topologyKey",
        "required",
    ),
    Case(
        "job-topology-spread-max-skew-zero",
        job_with("spec.tasks.0.template.spec.topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": "zone"}]),
        "spec.tasks[0].template.spec.topologySpreadConstraints[0].maxSkew",
        "must be at least 1",
    ),
    Case(
        "job-toleration-operator",
        job_with("spec.tasks.0.template.spec.tolerations", [{"key": "k", "operator": "Sometimes"}]),
        "spec.tasks[0].template.spec.tolerations[0].operator",
        "unsupported operator 'Sometimes'",
    ),
    Case(
        "resourcequota-bad-quantity",
        doc(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "team-a"},
                "spec": {"hard": {"cpu": "lots"}},
            }
        ),
        "spec.hard[cpu]",
        "quantities must match the regular expression",
    ),
    Case(
        "resourcequota-by-a-member",
        doc(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "team-a"},
                "spec": {"hard": {"cpu": "1"}},
            }
        ),
        None,
        'cannot create resource "resourcequotas" in API group "" in the namespace "team-a"',
        status=403,
        user="bob",
    ),
]


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Cast]:
    """The cast and the queues the table needs (made once: every case leaves the database unchanged)."""
    with module_data(django_db_blocker):
        cast = build_cast()
        _make_queues()
        yield cast


def _make_queues() -> None:
    for name in builders.COOKBOOK_JOB_QUEUES:
        builders.make_queue(name, allowed=("team-a",))
    builders.make_queue("closed-q", allowed=("team-a",))
    queue_services.close_queue(SYSTEM, "closed-q")
    builders.make_queue("parent-q", capability={"cpu": "10"})
    builders.make_queue("child-q", parent="parent-q")
    builders.make_queue("team-b-only", allowed=("team-b",))
    builders.make_queue("eng", capability={"cpu": "10"}, guarantee={"cpu": "4"}, deserved={"cpu": "4"})
    parent = "root"
    for level in range(1, 6):
        builders.make_queue(f"l{level}", parent=parent)
        parent = f"l{level}"


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_it_rejects_invalid_manifests(case: Case, world: Cast, db: Any) -> None:
    client = APIClient()
    client.force_authenticate(getattr(world, case.user))
    before = counts()
    response = post_yaml(client, "/api/v1/apply", case.body())
    body = response.json()
    assert response.status_code == case.status, json.dumps(body, indent=1)
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == case.status
    assert body["reason"] in ("Invalid", "BadRequest", "Forbidden")
    if case.field is None:
        assert case.message in body["message"]
    else:
        causes = body["details"]["causes"]
        matching = [c for c in causes if c["field"] == case.field]
        assert matching, causes
        assert any(case.message in c["message"] for c in matching), causes
        if body["reason"] == "Invalid":
            assert case.message in body["message"]
    assert counts() == before


def test_unsupported_kind_lists_the_supported_ones(world: Cast, db: Any) -> None:
    client = APIClient()
    client.force_authenticate(world.alice)
    body = post_yaml(
        client,
        "/api/v1/apply",
        to_yaml({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}),
    ).json()
    assert 'no matches for kind "Deployment" in version "apps/v1"' in body["message"]
    for supported in (
        "Job (batch.volcano.sh/v1alpha1)",
        "Queue (scheduling.volcano.sh/v1beta1)",
        "CronJob",
        "JobFlow",
        "JobTemplate",
        "PodGroup",
        "PriorityClass (scheduling.k8s.io/v1)",
        "Pod (v1)",
    ):
        assert supported in body["message"]
