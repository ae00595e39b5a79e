"""Volcano Job admission without the database: type checks, then the webhooks' mutating and validating rules."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from scheduler.quantity import parse_duration
from volcanoweb.core.errors import Errors
from volcanoweb.manifests.fields import (
    DNS1123_LABEL_MSG,
    DNS1123_LABEL_RE,
    MAX_POLICIES,
    MAX_REPLICAS,
    MAX_TASKS,
    check_dns_subdomain,
    check_enum,
    check_resource_list,
    expect,
    get_int,
    get_list,
    get_map,
    get_str,
    show,
)
from volcanoweb.manifests.pods import check_pod_template

USER_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
USER_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
JOB_PLUGINS = ("env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
_VALID_SUFFIX = f" valid events are [{' '.join(USER_EVENTS)}], valid actions are [{' '.join(USER_ACTIONS)}];"


def _is_duration(value: Any) -> bool:
    """True for a Go duration string that is not negative (``10m``, ``1h30m``, ``500ms``, ``0``)."""
    try:
        return isinstance(value, str) and parse_duration(value) >= 0
    except ValueError:
        return False


def _check_types(errors: Errors, spec: dict[str, Any]) -> None:
    """The CRD schema's part: types and simple bounds (before the webhook runs)."""
    get_int(errors, spec, "minAvailable", "spec.minAvailable")
    get_int(errors, spec, "maxRetry", "spec.maxRetry")
    get_int(errors, spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished")
    get_int(errors, spec, "minSuccess", "spec.minSuccess", minimum=1)
    for key in ("schedulerName", "queue", "priorityClassName"):
        value = get_str(errors, spec, key, f"spec.{key}")
        if value and key != "schedulerName":
            check_dns_subdomain(errors, f"spec.{key}", value)
    plugins = get_map(errors, spec, "plugins", "spec.plugins")
    for name, args in plugins.items():
        if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
            errors.add(
                f"spec.plugins.{name}",
                f"Invalid value: {show(args)}: spec.plugins.{name} in body must be an array of strings",
                "FieldValueTypeInvalid",
            )
    get_list(errors, spec, "policies", "spec.policies")
    get_list(errors, spec, "volumes", "spec.volumes")
    get_map(errors, spec, "networkTopology", "spec.networkTopology")
    tasks = spec.get("tasks")
    if tasks is not None and expect(errors, "spec.tasks", tasks, list, "array"):
        if len(tasks) > MAX_TASKS:
            errors.add(
                "spec.tasks", f"Too many: {len(tasks)}: must have at most {MAX_TASKS} items", "FieldValueTooMany"
            )
        for i, task in enumerate(tasks):
            path = f"spec.tasks[{i}]"
            if not expect(errors, path, task, dict, "object"):
                continue
            get_str(errors, task, "name", f"{path}.name")
            replicas = get_int(errors, task, "replicas", f"{path}.replicas")
            if replicas is not None and replicas > MAX_REPLICAS:
                errors.add(f"{path}.replicas", f"Invalid value: {replicas}: must be no more than {MAX_REPLICAS}")
            get_int(errors, task, "minAvailable", f"{path}.minAvailable")
            get_int(errors, task, "maxRetry", f"{path}.maxRetry")
            get_list(errors, task, "policies", f"{path}.policies")
            get_map(errors, task, "dependsOn", f"{path}.dependsOn")
            get_map(errors, task, "partitionPolicy", f"{path}.partitionPolicy")
            topology = get_str(errors, task, "topologyPolicy", f"{path}.topologyPolicy")
            if topology:
                check_enum(errors, f"{path}.topologyPolicy", topology, TOPOLOGY_POLICIES)


def default_job_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a (type-checked) Job spec with Volcano's mutating-webhook defaults applied."""
    spec = copy.deepcopy(spec)
    if not spec.get("queue"):
        spec["queue"] = "default"
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "volcano"
    if not spec.get("maxRetry"):
        spec["maxRetry"] = 3
    total_min = 0
    for i, task in enumerate(spec.get("tasks") or []):
        if not task.get("name"):
            task["name"] = f"default{i}"
        if not task.get("maxRetry"):
            task["maxRetry"] = 3
        task.setdefault("replicas", 0)
        if task.get("minAvailable") is None:
            partition = task.get("partitionPolicy") or {}
            if (partition.get("minPartitions") or 0) > 0:
                task["minAvailable"] = partition["minPartitions"] * (partition.get("partitionSize") or 0)
            else:
                task["minAvailable"] = task["replicas"]
        pod_spec = (task.get("template") or {}).get("spec")
        if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        total_min += task["minAvailable"]
    if not spec.get("minAvailable"):
        spec["minAvailable"] = total_min
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        if any(name in plugins for name in ("tensorflow", "mpi", "pytorch", "ray")) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
    return spec


@dataclass
class _PolicyTally:
    """What :func:`validate_policies` has seen in the policies checked so far."""

    events: set[str] = field(default_factory=set)
    codes: set[int] = field(default_factory=set)
    any_event: bool = False
    event_count: int = 0


def validate_policies(errors: Errors, policies: list[Any], path: str) -> None:
    """Volcano's policy rules; checks stop at the first failing policy."""
    if len(policies) > MAX_POLICIES:
        errors.add(path, f"Too many: {len(policies)}: must have at most {MAX_POLICIES} items", "FieldValueTooMany")
        return
    tally = _PolicyTally()
    for i, policy in enumerate(policies):
        if not _check_policy(errors, policy, f"{path}[{i}]", tally):
            return
    if tally.any_event and tally.event_count > 1:
        errors.add(path, "if there's * here, no other policy should be here")


def _check_policy(errors: Errors, policy: Any, ppath: str, tally: _PolicyTally) -> bool:
    """Check one policy against its own rules and the policies before it (``tally``, updated); False when it
    fails (the checks stop there)."""
    if not expect(errors, ppath, policy, dict, "object"):
        return False
    events: list[Any] = []
    if policy.get("event"):
        events.append(policy["event"])
    if policy.get("events") is not None:
        if not isinstance(policy["events"], list):
            expect(errors, f"{ppath}.events", policy["events"], list, "array")
            return False
        events.extend(policy["events"])
    exit_code = policy.get("exitCode")
    if exit_code is not None and not expect(errors, f"{ppath}.exitCode", exit_code, int, "integer"):
        return False
    timeout = policy.get("timeout")
    if timeout is not None and not _is_duration(timeout):
        errors.add(f"{ppath}.timeout", f"Invalid value: {show(timeout)}: must be a duration such as 10m or 1h30m")
        return False
    if events and exit_code is not None:
        errors.add(ppath, "must not specify event and exitCode simultaneously" + _VALID_SUFFIX)
        return False
    if not events and exit_code is None:
        errors.add(ppath, "either event and exitCode should be specified" + _VALID_SUFFIX)
        return False
    action = policy.get("action")
    if action not in USER_ACTIONS:
        errors.add(
            f"{ppath}.action",
            f"{ppath}.action: Invalid value: {show(action)}: invalid policy action" + _VALID_SUFFIX,
        )
        return False
    return _tally_events(errors, events, ppath, tally) and _tally_exit_code(errors, exit_code, ppath, tally)


def _tally_events(errors: Errors, events: list[Any], ppath: str, tally: _PolicyTally) -> bool:
    """A policy's events are known ones, not named by an earlier policy; False at the first that fails."""
    for event in events:
        if event not in USER_EVENTS:
            errors.add(
                f"{ppath}.event",
                f"{ppath}.event: Invalid value: {show(event)}: invalid policy event" + _VALID_SUFFIX,
            )
            return False
        if event in tally.events:
            errors.add(f"{ppath}.event", f"duplicate event {event}  across different policy" + _VALID_SUFFIX)
            return False
        tally.events.add(event)
        tally.event_count += 1
        tally.any_event = tally.any_event or event == "*"
    return True


def _tally_exit_code(errors: Errors, exit_code: Any, ppath: str, tally: _PolicyTally) -> bool:
    """A policy's exit code (if any) is not 0 and not named by an earlier policy; False when it fails."""
    if exit_code is not None:
        if exit_code == 0:
            errors.add(f"{ppath}.exitCode", "0 is not a valid error code" + _VALID_SUFFIX)
            return False
        if exit_code in tally.codes:
            errors.add(f"{ppath}.exitCode", f"duplicate exitCode {exit_code}" + _VALID_SUFFIX)
            return False
        tally.codes.add(exit_code)
    return True


def _is_dag(tasks: list[dict[str, Any]]) -> bool:
    names = {task.get("name") for task in tasks}
    graph: dict[str, list[str]] = {}
    for task in tasks:
        depends = task.get("dependsOn") or {}
        targets = depends.get("name") or []
        if not isinstance(targets, list):
            return False
        for target in targets:
            if target not in names:
                return False
        graph[task["name"]] = list(targets)
    state: dict[str, int] = {}

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1 or (state.get(nxt) is None and not visit(nxt)):
                return False
        state[node] = 2
        return True

    return all(state.get(node) is not None or visit(node) for node in graph)


def _check_volumes(errors: Errors, volumes: list[Any]) -> None:
    seen: set[str] = set()
    for i, volume in enumerate(volumes):
        path = f"spec.volumes[{i}]"
        if not expect(errors, path, volume, dict, "object"):
            return
        mount = volume.get("mountPath")
        if not mount:
            errors.add(f"{path}.mountPath", "mountPath is required;", "FieldValueRequired")
            return
        if not isinstance(mount, str) or ":" in mount:
            errors.add(f"{path}.mountPath", f"Invalid value: {show(mount)}: must be a path without ':'")
            return
        if mount in seen:
            errors.add(f"{path}.mountPath", f"duplicated mountPath: {mount};", "FieldValueDuplicate")
            return
        seen.add(mount)
        claim_name, claim = volume.get("volumeClaimName"), volume.get("volumeClaim")
        if not claim_name and not claim:
            errors.add(path, "either VolumeClaim or VolumeClaimName must be specified;", "FieldValueRequired")
            return
        if claim_name and claim:
            errors.add(
                path,
                "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                "If you want to create a new PVC, you do not need to specify VolumeClaimName",
            )
            return
        if claim_name and (
            not isinstance(claim_name, str) or not DNS1123_LABEL_RE.match(claim_name) or len(claim_name) > 253
        ):
            errors.add(f"{path}.volumeClaimName", f"invalid VolumeClaimName {claim_name} : [{DNS1123_LABEL_MSG}]")
            return


def _check_partition(errors: Errors, task: dict[str, Any], path: str, job_name: str) -> None:
    partition = task.get("partitionPolicy")
    if not partition:
        return
    name = task["name"]
    total = partition.get("totalPartitions") or 0
    size = partition.get("partitionSize") or 0
    min_partitions = partition.get("minPartitions") or 0
    for key in ("totalPartitions", "partitionSize", "minPartitions"):
        if partition.get(key) is not None and not isinstance(partition.get(key), int):
            expect(errors, f"{path}.partitionPolicy.{key}", partition.get(key), int, "integer")
            return
    if total <= 0:
        errors.add(
            f"{path}.partitionPolicy.totalPartitions",
            f"'TotalPartitions' must be greater than 0 in task: {name}, job: {job_name}",
        )
    if size <= 0:
        errors.add(
            f"{path}.partitionPolicy.partitionSize",
            f"'PartitionSize' must be greater than 0 in task: {name}, job: {job_name}",
        )
    if total > 0 and size > 0 and task.get("replicas", 0) != total * size:
        errors.add(
            f"{path}.replicas",
            f"'Replicas' are not equal to TotalPartitions*PartitionSize in task: {name}, job: {job_name}",
        )
    if min_partitions > 0 and task.get("minAvailable") != min_partitions * size:
        errors.add(
            f"{path}.minAvailable",
            f"'MinAvailable' is not equal to MinPartitions*PartitionSize in task: {name}, job: {job_name}",
        )


def _check_task(errors: Errors, task: dict[str, Any], i: int, job_name: str) -> None:
    path = f"spec.tasks[{i}]"
    name = task["name"]
    replicas, min_available = task.get("replicas", 0), task.get("minAvailable", 0)
    if replicas < 0:
        errors.add(f"{path}.replicas", f"'replicas' < 0 in task: {name}")
    if min_available < 0:
        errors.add(f"{path}.minAvailable", f"'minAvailable' < 0 in task: {name}")
    if task.get("maxRetry", 0) < 0:
        errors.add(f"{path}.maxRetry", "'maxRetry' cannot be less than zero")
    if min_available > replicas:
        errors.add(
            f"{path}.minAvailable", f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job_name};"
        )
    pod_name = f"{job_name}-{name}-{i}"
    if len(pod_name) > 63 or not DNS1123_LABEL_RE.match(pod_name):
        reason = "must be no more than 63 characters" if len(pod_name) > 63 else DNS1123_LABEL_MSG
        errors.add(f"{path}.name", f"create pod with name {pod_name} validate failed [{reason}];")
    validate_policies(errors, task.get("policies") or [], f"{path}.policies")
    check_pod_template(errors, task.get("template"), f"{path}.template")
    topology = task.get("topologyPolicy")
    if topology and topology != "none":
        pod_spec = (task.get("template") or {}).get("spec") or {}
        containers = list(pod_spec.get("containers") or []) + list(pod_spec.get("initContainers") or [])
        for j, container in enumerate(containers):
            resources = (container or {}).get("resources") or {}
            cpu = check_resource_list(
                Errors(), "", {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            ).get("cpu", 0)
            if cpu % 1000:
                errors.add(
                    f"{path}.template.spec.containers[{j}].resources",
                    f"the cpu request isn't an integer in spec.task[{i}] container[{j}].",
                )
    _check_partition(errors, task, path, job_name)


def _check_before_defaults(errors: Errors, spec: dict[str, Any]) -> bool:
    """The checks before Volcano's defaults: the schema's types, then at least one task and no negative
    counts. False when any failed."""
    _check_types(errors, spec)
    if errors:
        return False
    if not spec.get("tasks"):
        errors.add("spec.tasks", "No task specified in job spec", "FieldValueRequired")
        return False
    for key, message in (
        ("minAvailable", "job 'minAvailable' must be >= 0"),
        ("maxRetry", "'maxRetry' cannot be less than zero"),
        ("ttlSecondsAfterFinished", "'ttlSecondsAfterFinished' cannot be less than zero"),
    ):
        if (spec.get(key) or 0) < 0:
            errors.add(f"spec.{key}", message)
    return not errors


def _check_mpi_master(errors: Errors, plugins: dict[str, Any], tasks: list[dict[str, Any]]) -> bool:
    """The mpi plugin's master task (``--master=``, by default ``master``) is one of the job's tasks."""
    master = "master"
    for arg in plugins.get("mpi") or []:
        if arg.startswith("--master="):
            master = arg.split("=", 1)[1]
    if master not in {task["name"] for task in tasks}:
        errors.add("spec.plugins.mpi", "The specified mpi master task was not found")
        return False
    return True


def _check_tasks(errors: Errors, spec: dict[str, Any], name: str) -> None:
    """Each task of a defaulted spec (its name, unique, and its own checks), then the replicas in total."""
    seen: set[str] = set()
    total_replicas = 0
    for i, task in enumerate(spec["tasks"]):
        if not DNS1123_LABEL_RE.match(task["name"]) or len(task["name"]) > 63:
            errors.add(f"spec.tasks[{i}].name", f"Invalid value: {show(task['name'])}: {DNS1123_LABEL_MSG}")
        if task["name"] in seen:
            errors.add(f"spec.tasks[{i}].name", f"duplicated task name {task['name']};", "FieldValueDuplicate")
            break
        seen.add(task["name"])
        total_replicas += task.get("replicas", 0)
        _check_task(errors, task, i, name)
    if total_replicas > MAX_REPLICAS:
        errors.add(
            "spec.tasks", f"Invalid value: {total_replicas}: a job may have at most {MAX_REPLICAS} pods in total"
        )
    if total_replicas < spec["minAvailable"]:
        errors.add("spec.minAvailable", "job 'minAvailable' should not be greater than total replicas in tasks;")


def check_job_spec(errors: Errors, spec: Any, name: str) -> dict[str, Any] | None:
    """Return the defaulted spec after Volcano's CREATE checks that need no database, recording failures.

    The order is Kubernetes': schema types first, then the mutating defaults, then the validating
    webhook (its messages, and those of the ValidatingAdmissionPolicies that repeat its checks).
    """
    if spec is None:
        errors.required("spec")
        return None
    if not expect(errors, "spec", spec, dict, "object"):
        return None
    if not _check_before_defaults(errors, spec):
        return None
    spec = defaulted = default_job_spec(spec)  # `spec` is Any (the input); `defaulted` is the typed result
    plugins = spec.get("plugins") or {}
    if "mpi" in plugins and not _check_mpi_master(errors, plugins, spec["tasks"]):
        return None
    topology = spec.get("networkTopology") or {}
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        errors.add(
            "spec.networkTopology",
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously",
        )
    _check_tasks(errors, spec, name)
    validate_policies(errors, spec.get("policies") or [], "spec.policies")
    for plugin in plugins:
        if plugin not in JOB_PLUGINS:
            errors.add(f"spec.plugins.{plugin}", f"unable to find job plugin: {plugin};", "FieldValueNotSupported")
    _check_volumes(errors, spec.get("volumes") or [])
    if not _is_dag(spec["tasks"]):
        errors.add("spec.tasks", "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG);")
    return defaulted


def check_job_name(errors: Errors, name: str) -> None:
    """Volcano: the job name must be a valid (DNS-1123 label) name, as pod names derive from it."""
    if name and (len(name) > 63 or not DNS1123_LABEL_RE.match(name)):
        reason = "must be no more than 63 characters" if len(name) > 63 else DNS1123_LABEL_MSG
        errors.add("metadata.name", f"create job with name {name} validate failed [{reason}]")


def _strip_updatable(spec: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(spec)
    stripped.pop("minAvailable", None)
    stripped.pop("priorityClassName", None)
    for task in stripped.get("tasks") or []:
        task.pop("replicas", None)
        task.pop("minAvailable", None)
    for volume in stripped.get("volumes") or []:
        if volume.get("volumeClaim"):
            volume.pop("volumeClaimName", None)
    return stripped


def check_job_update(errors: Errors, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Volcano's UPDATE rules: only minAvailable, priorityClassName and task replicas/minAvailable change."""
    total = 0
    for i, task in enumerate(new.get("tasks") or []):
        total += task.get("replicas", 0)
        if task.get("minAvailable", 0) > task.get("replicas", 0):
            errors.add(f"spec.tasks[{i}].minAvailable", f"'minAvailable' must be <= 'replicas' in task: {task['name']}")
            return
    if new.get("minAvailable", 0) > total:
        errors.add("spec.minAvailable", "job 'minAvailable' must not be greater than total replicas")
        return
    if len(new.get("tasks") or []) != len(old.get("tasks") or []):
        errors.add("spec.tasks", "job updates may not add or remove tasks", "FieldValueForbidden")
        return
    if _strip_updatable(old) != _strip_updatable(new):
        errors.add(
            "spec",
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec` and `PriorityClassName`",
            "FieldValueForbidden",
        )


def task_min_resources(spec: dict[str, Any]) -> dict[str, int]:
    """Return the gang's minResources: Σ over tasks of minAvailable x the task's per-pod requests."""
    from volcanoweb.manifests.pods import pod_requests

    total: dict[str, int] = {}
    for task in spec.get("tasks") or []:
        per_pod = pod_requests((task.get("template") or {}).get("spec") or {})
        for name, amount in per_pod.items():
            total[name] = total.get(name, 0) + amount * int(task.get("minAvailable") or 0)
    return total
