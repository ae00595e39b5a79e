"""OpenAPI v3 schemas of the served kinds, for ``kubectl explain`` and clients that read ``/openapi/v3``.

Built from the field trees the server validates with (:data:`volcanoweb.manifests.strict.SCHEMAS`), so the
published schema and the server's ``fieldValidation`` never disagree: every level Volcano's CRDs define is
an object with its properties, leaves get their type and a description (Volcano's CRD texts, shortened).
Below the levels described there (Kubernetes' own nested structures: affinity, volume sources, probes,
security contexts...) a field is an object that keeps unknown fields, as a CRD's
``x-kubernetes-preserve-unknown-fields`` does. ``status`` has the fields the controllers write.
"""

from __future__ import annotations

from typing import Any

from volcanoweb.manifests import strict

STRING = {"type": "string"}
INTEGER = {"type": "integer", "format": "int32"}
BOOLEAN = {"type": "boolean"}
QUANTITY = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
STRINGS = {"type": "array", "items": STRING}
FREE_LIST = {"type": "array", "items": FREE}
TIME = {"type": "string", "format": "date-time"}

#: A leaf's type by field name; a leaf not named here is a free object.
TYPES: dict[str, dict[str, Any]] = {
    **dict.fromkeys(
        (
            "apiVersion",
            "kind",
            "name",
            "namespace",
            "generateName",
            "uid",
            "resourceVersion",
            "selfLink",
            "image",
            "workingDir",
            "restartPolicy",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "imagePullPolicy",
            "protocol",
            "hostIP",
            "value",
            "mountPath",
            "subPath",
            "mountPropagation",
            "subPathExpr",
            "recursiveReadOnly",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "nodeName",
            "hostname",
            "subdomain",
            "schedulerName",
            "priorityClassName",
            "runtimeClassName",
            "preemptionPolicy",
            "key",
            "operator",
            "effect",
            "topologyPolicy",
            "queue",
            "action",
            "event",
            "timeout",
            "mode",
            "highestTierName",
            "volumeClaimName",
            "storageClassName",
            "volumeAttributesClassName",
            "volumeMode",
            "volumeName",
            "runningEstimate",
            "parent",
            "dequeueStrategy",
            "schedule",
            "timeZone",
            "concurrencyPolicy",
            "jobRetainPolicy",
            "taskName",
            "path",
            "phase",
            "description",
            "type",
            "reason",
            "message",
        ),
        STRING,
    ),
    **dict.fromkeys(
        (
            "generation",
            "deletionGracePeriodSeconds",
            "hostPort",
            "containerPort",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "priority",
            "tolerationSeconds",
            "replicas",
            "minAvailable",
            "maxRetry",
            "exitCode",
            "iteration",
            "totalPartitions",
            "partitionSize",
            "minPartitions",
            "highestTierAllowed",
            "ttlSecondsAfterFinished",
            "minSuccess",
            "minMember",
            "subGroupSize",
            "minSubGroups",
            "weight",
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
            "port",
        ),
        INTEGER,
    ),
    **dict.fromkeys(
        (
            "stdin",
            "stdinOnce",
            "tty",
            "readOnly",
            "automountServiceAccountToken",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "shareProcessNamespace",
            "enableServiceLinks",
            "setHostnameAsFQDN",
            "hostUsers",
            "reclaimable",
            "suspend",
            "globalDefault",
        ),
        BOOLEAN,
    ),
    **dict.fromkeys(("creationTimestamp", "deletionTimestamp"), TIME),
    **dict.fromkeys(
        (
            "command",
            "args",
            "finalizers",
            "accessModes",
            "events",
            "targets",
            "matchLabelKeys",
            "values",
            "scopes",
        ),
        STRINGS,
    ),
    **dict.fromkeys(
        (
            "ownerReferences",
            "managedFields",
            "envFrom",
            "resizePolicy",
            "restartPolicyRules",
            "volumeDevices",
            "volumes",
            "hostAliases",
            "readinessGates",
            "topologySpreadConstraints",
            "schedulingGates",
            "resourceClaims",
            "ephemeralContainers",
            "claims",
            "httpHeader",
            "extendClusters",
        ),
        FREE_LIST,
    ),
}
#: Descriptions by dotted path from the kind's root (``spec.tasks.replicas``), then by field name.
DESCRIPTIONS: dict[str, str] = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
    "metadata": "Standard object's metadata.",
    "spec": "Specification of the desired behavior of the object.",
    "status": "Current status of the object, written by the controllers.",
    "name": "Name of the object or of this entry.",
    "namespace": "Namespace of the object.",
    "labels": "Map of string keys and values that can be used to organize and categorize objects.",
    "annotations": "Unstructured key value map stored with the object.",
    "ownerReferences": "Objects this object depends on; garbage collection deletes it with its owner.",
    "finalizers": "Must be empty before the object is deleted from the registry.",
    "generateName": "Optional prefix used by the server to generate a unique name.",
    "uid": "Unique identifier of the object.",
    "resourceVersion": "Opaque value that represents the internal version of this object.",
    "generation": "A sequence number representing a specific generation of the desired state.",
    "creationTimestamp": "The time at which this object was created.",
    "deletionTimestamp": "The time at which this object will be deleted.",
    "spec.schedulerName": "SchedulerName is the default value of tasks.template.spec.schedulerName.",
    "spec.minAvailable": "The minimal available pods to run for this Job. Defaults to the sum of the tasks' replicas.",
    "spec.queue": 'Specifies the queue that will be used in the scheduler, "default" queue is used this leaves empty.',
    "spec.maxRetry": "Specifies the maximum number of retries before marking this Job failed. Defaults to 3.",
    "spec.ttlSecondsAfterFinished": "Limits the lifetime of a Job that has finished execution (either Completed "
    "or Failed). If this field is set, ttlSecondsAfterFinished after the Job finishes, it is eligible to be "
    "automatically deleted.",
    "spec.priorityClassName": "If specified, indicates the job's priority.",
    "spec.minSuccess": "The minimal success pods to run for this Job.",
    "spec.runningEstimate": "Running Estimate is a user running duration estimate for the job.",
    "spec.volumes": "The volumes mount on Job.",
    "spec.tasks": "Tasks specifies the task specification of Job.",
    "spec.tasks.name": "Name specifies the name of tasks.",
    "spec.tasks.replicas": "Replicas specifies the replicas of this TaskSpec in Job.",
    "spec.tasks.minAvailable": "The minimal available pods to run for this Task. Defaults to the task replicas.",
    "spec.tasks.maxRetry": "Specifies the maximum number of retries before marking this Task failed.",
    "spec.tasks.template": "Specifies the pod that will be created for this TaskSpec when executing a Job.",
    "spec.tasks.policies": "Specifies the lifecycle of task.",
    "spec.tasks.dependsOn": "Specifies the tasks that this task depends on.",
    "spec.tasks.topologyPolicy": "Topology policy of the task (none, best-effort, restricted, single-numa-node).",
    "spec.policies": "Specifies the default lifecycle of tasks.",
    "policies": "Lifecycle policies: what to do (action) when an event or exit code is seen.",
    "action": 'The action that will be taken to the PodGroup according to Event. One of "Restart", '
    '"None". Default to None.',
    "event": "The Event recorded by scheduler; the controller takes actions according to this Event.",
    "events": "The Events recorded by scheduler; the controller takes actions according to this Events.",
    "exitCode": "The exit code of the pod container, controller will take action according to it.",
    "timeout": "Timeout is the grace period for controller to take actions. Default to nil (take action immediately).",
    "spec.plugins": "Enabled task plugins when creating job (env, svc, ssh, ...), with their arguments.",
    "spec.networkTopology": "NetworkTopology defines the NetworkTopology config of the job.",
    "spec.minMember": "MinMember defines the minimal number of members/tasks to run the pod group.",
    "spec.minTaskMember": "MinTaskMember defines the minimal number of pods to run each task in the pod group.",
    "spec.minResources": "MinResources defines the minimal resource of members/tasks to run the pod group.",
    "spec.weight": "The weight of the queue in the proportion plugin.",
    "spec.capability": "The upper limit of resources the queue may use.",
    "spec.deserved": "The amount of resources the queue deserves (capacity plugin).",
    "spec.guarantee": "The amount of resources reserved for the queue.",
    "spec.reclaimable": "Whether other queues may reclaim resources of this queue. Defaults to true.",
    "spec.parent": "The parent queue (hierarchical queues).",
    "spec.schedule": "The schedule in Cron format.",
    "spec.suspend": "Suspend subsequent executions; does not apply to already started executions.",
    "spec.concurrencyPolicy": "How to treat concurrent executions: Allow, Forbid or Replace.",
    "spec.jobTemplate": "The job that will be created when executing a CronJob.",
    "spec.flows": "The flows of a JobFlow: job templates and their dependencies.",
    "spec.jobRetainPolicy": "Retain (keep) or delete the jobs of the flow when it has finished.",
    "status.state": "Current state of Job.",
    "status.state.phase": "The phase of Job (Pending, Running, Completed, Failed...).",
    "status.minAvailable": "The minimal available pods to run for this Job.",
    "status.pending": "The number of pending pods.",
    "status.running": "The number of running pods.",
    "status.succeeded": "The number of pods which reached phase Succeeded.",
    "status.failed": "The number of pods which reached phase Failed.",
    "status.terminating": "The number of pods which are terminating.",
    "status.unknown": "The number of pods in an unknown phase.",
    "status.retryCount": "The number of times the job was retried.",
    "status.conditions": "The latest available observations of the object's current state.",
    "status.phase": "Current phase.",
    "target": "TargetObject defines the target object of this command.",
    "reason": "Unique, one-word, CamelCase reason for this command or event.",
    "message": "Human-readable message indicating details of this command or event.",
    "value": "The value of this entry.",
    "limits": "Limits describes the maximum amount of compute resources allowed.",
    "requests": "Requests describes the minimum amount of compute resources required.",
    "containers": "List of containers belonging to the pod.",
    "template": "The pod template: metadata and spec of the pods created for this task.",
    "partitionPolicy": "Partition policy of the task: how its pods are split into partitions.",
    "dependsOn": "Dependencies: the names of the tasks or flows that must run first.",
}

_CONDITION = {
    "type": "object",
    "properties": {
        "type": STRING,
        "status": STRING,
        "reason": STRING,
        "message": STRING,
        "lastTransitionTime": TIME,
        "transitionID": STRING,
    },
}
_COUNTS = dict.fromkeys(("pending", "running", "succeeded", "failed", "terminating", "unknown"), INTEGER)
#: The status each kind's controller writes.
STATUS: dict[str, dict[str, Any]] = {
    "Job": {
        "state": {"phase": STRING, "reason": STRING, "message": STRING, "lastTransitionTime": TIME},
        "minAvailable": INTEGER,
        **_COUNTS,
        "version": INTEGER,
        "retryCount": INTEGER,
        "runningDuration": STRING,
        "taskStatusCount": FREE,
        "controlledResources": strict.STRING_MAP,
        "conditions": [_CONDITION],
    },
    "PodGroup": {
        "phase": STRING,
        "running": INTEGER,
        "succeeded": INTEGER,
        "failed": INTEGER,
        "conditions": [_CONDITION],
    },
    "Queue": {
        "state": STRING,
        **dict.fromkeys(("pending", "running", "inqueue", "completed", "unknown"), INTEGER),
        "allocated": strict.STRING_MAP,
        "reservation": FREE,
    },
    "CronJob": {"active": FREE_LIST, "lastScheduleTime": TIME, "lastSuccessfulTime": TIME},
    "JobFlow": {
        "state": {"phase": STRING},
        "pendingJobs": STRINGS,
        "runningJobs": STRINGS,
        "completedJobs": STRINGS,
        "failedJobs": STRINGS,
        "terminatedJobs": STRINGS,
        "unKnowJobs": STRINGS,
        "jobStatusList": FREE_LIST,
        "conditions": FREE,
    },
    "Pod": {
        "phase": STRING,
        "reason": STRING,
        "message": STRING,
        "hostIP": STRING,
        "podIP": STRING,
        "startTime": TIME,
        "qosClass": STRING,
        "conditions": [_CONDITION],
        "containerStatuses": FREE_LIST,
    },
}
#: Kinds only the Kubernetes API serves (their field trees are not manifests the REST API takes).
EXTRA: dict[str, Any] = {
    "Command": {
        "apiVersion": strict.ANY,
        "kind": strict.ANY,
        "metadata": strict.METADATA,
        "action": strict.ANY,
        "reason": strict.ANY,
        "message": strict.ANY,
        "target": dict.fromkeys(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"), strict.ANY),
    },
    "Namespace": {
        "apiVersion": strict.ANY,
        "kind": strict.ANY,
        "metadata": strict.METADATA,
        "spec": {"finalizers": strict.ANY},
        "status": {"phase": strict.ANY},
    },
    "Node": {
        "apiVersion": strict.ANY,
        "kind": strict.ANY,
        "metadata": strict.METADATA,
        "spec": {
            "taints": [dict.fromkeys(("key", "value", "effect", "timeAdded"), strict.ANY)],
            "unschedulable": strict.ANY,
            "podCIDR": strict.ANY,
            "providerID": strict.ANY,
        },
        "status": {
            "capacity": strict.STRING_MAP,
            "allocatable": strict.STRING_MAP,
            "conditions": [
                dict.fromkeys(
                    ("type", "status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime"), strict.ANY
                )
            ],
            "addresses": [dict.fromkeys(("type", "address"), strict.ANY)],
            "nodeInfo": dict.fromkeys(
                (
                    "architecture",
                    "operatingSystem",
                    "osImage",
                    "kernelVersion",
                    "containerRuntimeVersion",
                    "kubeletVersion",
                    "kubeProxyVersion",
                    "machineID",
                    "systemUUID",
                    "bootID",
                ),
                strict.ANY,
            ),
        },
    },
    "Service": {
        "apiVersion": strict.ANY,
        "kind": strict.ANY,
        "metadata": strict.METADATA,
        "spec": {
            "type": strict.ANY,
            "clusterIP": strict.ANY,
            "selector": strict.STRING_MAP,
            "ports": [dict.fromkeys(("name", "protocol", "port", "targetPort"), strict.ANY)],
        },
        "status": {"loadBalancer": strict.ANY},
    },
    "Event": {
        **dict.fromkeys(("apiVersion", "kind", "type", "reason", "message", "count"), strict.ANY),
        "metadata": strict.METADATA,
        "involvedObject": dict.fromkeys(("apiVersion", "kind", "namespace", "name", "uid"), strict.ANY),
        "firstTimestamp": strict.ANY,
        "lastTimestamp": strict.ANY,
        "source": {"component": strict.ANY},
    },
}
_LEAF_OVERRIDES: dict[str, dict[str, Any]] = {
    "count": INTEGER,
    "status": STRING,  # a condition's True/False/Unknown (an object's status is a tree, never a leaf)
    "lastHeartbeatTime": TIME,
    "lastTransitionTime": TIME,
    "timeAdded": TIME,
    "targetPort": QUANTITY,
    "address": STRING,
    **dict.fromkeys(
        (
            "architecture",
            "operatingSystem",
            "osImage",
            "kernelVersion",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "machineID",
            "systemUUID",
            "bootID",
            "podCIDR",
            "providerID",
            "clusterIP",
        ),
        STRING,
    ),
    "firstTimestamp": TIME,
    "lastTimestamp": TIME,
    "controller": BOOLEAN,
    "blockOwnerDeletion": BOOLEAN,
}


def _describe(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    text = DESCRIPTIONS.get(path) or DESCRIPTIONS.get(name)
    return {**schema, "description": text} if text else schema


def convert(node: Any, path: str = "") -> dict[str, Any]:
    """Return the OpenAPI v3 schema of one field tree (``path``: the field's dotted path, "" for the root)."""
    name = path.rpartition(".")[2]
    if isinstance(node, dict) and (isinstance(node.get("type"), str) or "anyOf" in node):
        return _describe(dict(node), path, name)  # already a schema (the status tables)
    if isinstance(node, dict):
        properties = {key: convert(child, f"{path}.{key}" if path else key) for key, child in node.items()}
        return _describe({"type": "object", "properties": properties}, path, name)
    if isinstance(node, list):
        items = convert(node[0], path)
        items.pop("description", None)  # the field's description is the array's
        return _describe({"type": "array", "items": items}, path, name)
    if isinstance(node, strict.MapOf):
        values = STRING if node is strict.STRING_MAP else convert(node.values, path)
        if name in (
            "limits",
            "requests",
            "capability",
            "capacity",
            "allocatable",
            "deserved",
            "hard",
            "minResources",
            "allocated",
            "resource",
        ):
            values = QUANTITY
        return _describe({"type": "object", "additionalProperties": values}, path, name)
    leaf = _LEAF_OVERRIDES.get(name) or TYPES.get(name) or FREE
    return _describe(dict(leaf), path, name)


def tree_of(kind: str) -> Any:
    """Return the field tree of a kind with its status (None for a kind without one)."""
    tree = strict.SCHEMAS.get(kind) or EXTRA.get(kind)
    if tree is None:
        return None
    tree = dict(tree)
    if kind in STATUS:
        tree["status"] = STATUS[kind]
    return tree


def schema_of(kind: str) -> dict[str, Any]:
    """Return the OpenAPI v3 schema of a served kind (a free object for a kind without a field tree)."""
    tree = tree_of(kind)
    if tree is None:
        return dict(FREE)
    return convert(tree)
