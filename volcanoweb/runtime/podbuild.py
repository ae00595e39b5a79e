"""Pod construction from a task template, with the labels and annotations Volcano's job controller sets.

Also the pod's backend form.
"""

from __future__ import annotations

import copy
import secrets
import string
from typing import Any

from scheduler.decode import GROUP_ANNOTATION
from volcanoweb.clusters.backends.base import Container, OwnerReference, PodSpec, Volume, VolumeMount
from volcanoweb.jobs.models import Job
from volcanoweb.runtime.plugins import JobContext, Plugin

TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
TEMPLATE_UID = "volcano.sh/template-uid"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
PARTITION_ID = "volcano.sh/partition-id"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"
COPIED_JOB_ANNOTATIONS = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
    "volcano.sh/jdb-min-available",
    "volcano.sh/jdb-max-unavailable",
)
COPIED_JOB_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
SIM_PREFIX = "sim.volcanoweb.io/"
_ALPHABET = string.ascii_lowercase + string.digits


def pod_name(job_name: str, task_name: str, index: int) -> str:
    """Return ``<job>-<task>-<index>``."""
    return f"{job_name}-{task_name}-{index}"


def build_pod(
    job: Job, task: dict[str, Any], index: int, podgroup: str, plugins: list[Plugin], ctx: JobContext
) -> dict[str, Any]:
    """Return the Kubernetes-shaped pod (metadata + spec) for one index of a task, plugins applied."""
    template = copy.deepcopy(task.get("template") or {})
    meta = template.get("metadata") or {}
    spec: dict[str, Any] = template.get("spec") or {}
    name = pod_name(job.name, task["name"], index)
    status = job.status or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    labels.update(
        {
            TASK_SPEC: task["name"],
            TASK_INDEX: str(index),
            JOB_NAME: job.name,
            JOB_NAMESPACE: job.namespace,
            QUEUE_NAME: job.queue_name,
        }
    )
    annotations.update(
        {
            TASK_SPEC: task["name"],
            TASK_INDEX: str(index),
            JOB_NAME: job.name,
            QUEUE_NAME: job.queue_name,
            JOB_VERSION: str(int(status.get("version") or 0)),
            JOB_RETRY_COUNT: str(int(status.get("retryCount") or 0)),
            TEMPLATE_UID: f"{job.name}-{task['name']}",
            GROUP_ANNOTATION: podgroup,
        }
    )
    if task.get("topologyPolicy"):
        annotations[NUMA_POLICY] = task["topologyPolicy"]
    partition = task.get("partitionPolicy") or {}
    if partition.get("partitionSize"):
        labels[PARTITION_ID] = str(index // int(partition["partitionSize"]))
    for key in COPIED_JOB_ANNOTATIONS:
        if key in job.annotations:
            annotations[key] = job.annotations[key]
    for key in COPIED_JOB_LABELS:
        if key in job.labels:
            labels[key] = job.labels[key]
    for key, value in job.annotations.items():  # volcanoweb extension: job-wide simulation knobs
        if key.startswith(SIM_PREFIX):
            annotations.setdefault(key, value)
    spec["schedulerName"] = spec.get("schedulerName") or job.spec.get("schedulerName") or "volcano"
    if not spec.get("priorityClassName") and job.spec.get("priorityClassName"):
        spec["priorityClassName"] = job.spec["priorityClassName"]
    _mount_job_volumes(job, spec)
    pod = {
        "metadata": {"name": name, "namespace": job.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }
    for plugin in plugins:
        plugin.on_pod_create(ctx, pod, task, index)
    return pod


def _mount_job_volumes(job: Job, spec: dict[str, Any]) -> None:
    seen: set[str] = set()
    for volume in job.spec.get("volumes") or []:
        claim = volume.get("volumeClaimName")
        if not claim or claim in seen:
            continue
        seen.add(claim)
        name = f"{job.name}-{''.join(secrets.choice(_ALPHABET) for _ in range(12))}"
        spec.setdefault("volumes", []).append({"name": name, "persistentVolumeClaim": {"claimName": claim}})
        for container in spec.get("containers") or []:
            container.setdefault("volumeMounts", []).append({"name": name, "mountPath": volume.get("mountPath", "")})


def _env(container: dict[str, Any], config_maps: dict[str, dict[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        if "value" in item:
            env[item["name"]] = str(item.get("value") or "")
            continue
        ref = (item.get("valueFrom") or {}).get("configMapKeyRef") or {}
        data = config_maps.get(ref.get("name", ""))
        if data is not None and ref.get("key") in data:
            env[item["name"]] = data[ref["key"]]
    return env


def _container(container: dict[str, Any], config_maps: dict[str, dict[str, str]]) -> Container:
    resources = container.get("resources") or {}
    mounts = [
        VolumeMount(
            name=m["name"],
            mount_path=m.get("mountPath", ""),
            read_only=bool(m.get("readOnly")),
            sub_path=m.get("subPath", ""),
        )
        for m in container.get("volumeMounts") or []
        if isinstance(m, dict) and m.get("name")
    ]
    return Container(
        name=container.get("name") or "main",
        image=container.get("image") or "",
        command=[str(c) for c in container.get("command") or []],
        args=[str(a) for a in container.get("args") or []],
        env=_env(container, config_maps),
        requests={k: str(v) for k, v in (resources.get("requests") or {}).items()},
        limits={k: str(v) for k, v in (resources.get("limits") or {}).items()},
        volume_mounts=mounts,
        ports=copy.deepcopy(container.get("ports") or []),
    )


def to_backend_spec(job: Job, pod: dict[str, Any], config_maps: dict[str, dict[str, str]]) -> PodSpec:
    """Return the backend's :class:`PodSpec` for a built pod (env from ConfigMaps inlined)."""
    meta, spec = pod["metadata"], pod["spec"]
    volumes = [
        Volume(name=v["name"], source={k: copy.deepcopy(x) for k, x in v.items() if k != "name"})
        for v in spec.get("volumes") or []
        if isinstance(v, dict) and v.get("name")
    ]
    return PodSpec(
        namespace=meta["namespace"],
        name=meta["name"],
        containers=[_container(c, config_maps) for c in spec.get("containers") or [] if isinstance(c, dict)],
        labels=dict(meta["labels"]),
        annotations=dict(meta["annotations"]),
        scheduler_name=spec.get("schedulerName") or "volcano",
        init_containers=[_container(c, config_maps) for c in spec.get("initContainers") or [] if isinstance(c, dict)],
        volumes=volumes,
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=copy.deepcopy(spec.get("tolerations") or []),
        affinity=copy.deepcopy(spec.get("affinity")),
        priority_class_name=spec.get("priorityClassName") or "",
        restart_policy=spec.get("restartPolicy") or "Never",
        owner=OwnerReference(kind="Job", name=job.name, uid=str(job.uid)),
        hostname=spec.get("hostname") or "",
        subdomain=spec.get("subdomain") or "",
        service_account_name=spec.get("serviceAccountName") or "",
    )
