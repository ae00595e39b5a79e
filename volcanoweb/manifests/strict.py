"""Strict field validation (Kubernetes' ``fieldValidation``): unknown and duplicate fields.

Kubernetes answers a write that carries a field its schema does not know, or a key given twice, according
to the ``fieldValidation`` query parameter: ``Strict`` (what ``kubectl`` sends by default) refuses it with
a 400 naming every such field, ``Warn`` accepts the object without them and answers one ``Warning`` header
per field, ``Ignore`` drops them silently. Unknown fields are never stored.

The known fields are described here, per kind, as small trees (:data:`SCHEMAS`): every level that Volcano
defines (Job, task, policy, PodGroup, Queue, CronJob, JobFlow, JobTemplate), object metadata, the pod
template, the PodSpec and the Container. Below those, Kubernetes' own nested structures (affinity, volume
sources, probes, security contexts, ``env[].valueFrom``...) are not described and pass as given
(a documented deviation, docs/adr/0011-hostile-input-strict-fields-live-isolation.md). ``status`` is the server's and
is accepted (so that a GET output re-applies) without checks.
"""

from __future__ import annotations

from typing import Any

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.manifests.marked import duplicate_fields

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
MODES = (STRICT, WARN, IGNORE)


class _Any:
    """Any value: not described further."""


class MapOf:
    """A map with free keys whose values follow ``values``."""

    def __init__(self, values: Any) -> None:
        self.values = values


ANY = _Any()
STRING_MAP = MapOf(ANY)

METADATA = {
    key: STRING_MAP if key in ("labels", "annotations") else ANY
    for key in (
        "name",
        "namespace",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "generateName",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    )
}
RESOURCES = {"limits": STRING_MAP, "requests": STRING_MAP, "claims": ANY}
LABEL_SELECTOR = {"matchLabels": STRING_MAP, "matchExpressions": [{"key": ANY, "operator": ANY, "values": ANY}]}


def _fields(*names: str, **described: Any) -> dict[str, Any]:
    return {**dict.fromkeys(names, ANY), **described}


CONTAINER = _fields(
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "envFrom",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    ports=[_fields("name", "hostPort", "containerPort", "protocol", "hostIP")],
    env=[_fields("name", "value", "valueFrom")],
    resources=RESOURCES,
    volumeMounts=[
        _fields("name", "readOnly", "recursiveReadOnly", "mountPath", "subPath", "mountPropagation", "subPathExpr")
    ],
)
POD_SPEC = _fields(
    "volumes",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
    "ephemeralContainers",
    containers=[CONTAINER],
    initContainers=[CONTAINER],
    tolerations=[_fields("key", "operator", "value", "effect", "tolerationSeconds")],
    imagePullSecrets=[_fields("name")],
    nodeSelector=STRING_MAP,
    overhead=STRING_MAP,
    resources=RESOURCES,
)
POD_TEMPLATE = {"metadata": METADATA, "spec": POD_SPEC}
NETWORK_TOPOLOGY = _fields("mode", "highestTierAllowed", "highestTierName")
POLICY = _fields("action", "event", "events", "exitCode", "timeout")
TASK = _fields(
    "name",
    "replicas",
    "minAvailable",
    "topologyPolicy",
    "maxRetry",
    template=POD_TEMPLATE,
    policies=[POLICY],
    dependsOn=_fields("name", "iteration"),
    partitionPolicy=_fields("totalPartitions", "partitionSize", "minPartitions", networkTopology=NETWORK_TOPOLOGY),
)
VOLUME_CLAIM = _fields(
    "accessModes",
    "dataSource",
    "dataSourceRef",
    "storageClassName",
    "volumeAttributesClassName",
    "volumeMode",
    "volumeName",
    resources=RESOURCES,
    selector=LABEL_SELECTOR,
)
JOB_SPEC = _fields(
    "schedulerName",
    "minAvailable",
    "runningEstimate",
    "queue",
    "maxRetry",
    "ttlSecondsAfterFinished",
    "priorityClassName",
    "minSuccess",
    volumes=[_fields("mountPath", "volumeClaimName", volumeClaim=VOLUME_CLAIM)],
    tasks=[TASK],
    policies=[POLICY],
    plugins=MapOf(ANY),
    networkTopology=NETWORK_TOPOLOGY,
)
PODGROUP_SPEC = _fields(
    "minMember",
    "queue",
    "priorityClassName",
    minTaskMember=STRING_MAP,
    minResources=STRING_MAP,
    networkTopology=NETWORK_TOPOLOGY,
    subGroupPolicy=[
        _fields(
            "name",
            "subGroupSize",
            "minSubGroups",
            "matchLabelKeys",
            labelSelector=LABEL_SELECTOR,
            networkTopology=NETWORK_TOPOLOGY,
        )
    ],
)
QUEUE_SPEC = _fields(
    "weight",
    "reclaimable",
    "type",
    "parent",
    "priority",
    "dequeueStrategy",
    "affinity",
    capability=STRING_MAP,
    deserved=STRING_MAP,
    guarantee={"resource": STRING_MAP},
    extendClusters=[_fields("name", "weight", "capacity")],
)
CRONJOB_SPEC = _fields(
    "schedule",
    "timeZone",
    "startingDeadlineSeconds",
    "concurrencyPolicy",
    "suspend",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    jobTemplate={"metadata": METADATA, "spec": JOB_SPEC},
)
JOBFLOW_SPEC = _fields(
    "jobRetainPolicy",
    flows=[
        _fields(
            "name",
            dependsOn=_fields(
                "targets",
                probe=_fields(
                    httpGetList=[_fields("taskName", "path", "port", "httpHeader")],
                    tcpSocketList=[_fields("taskName", "port")],
                    taskStatusList=[_fields("taskName", "phase")],
                ),
            ),
            patch={"jobSpec": JOB_SPEC},
        )
    ],
)


def _object(spec: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": ANY, "kind": ANY, "metadata": METADATA, "spec": spec, "status": ANY, **extra}


#: The known fields of each kind, by ``kind`` (the scheduler configuration is checked by its own parser).
SCHEMAS: dict[str, Any] = {
    "Job": _object(JOB_SPEC),
    "CronJob": _object(CRONJOB_SPEC),
    "PodGroup": _object(PODGROUP_SPEC),
    "Queue": _object(QUEUE_SPEC),
    "JobFlow": _object(JOBFLOW_SPEC),
    "JobTemplate": _object(JOB_SPEC),
    "Pod": _object(POD_SPEC),
    "ResourceQuota": _object(_fields("scopes", "scopeSelector", hard=STRING_MAP)),
    # topology.volcano.sh/v1alpha1, as Volcano's CRD (config/crd/volcano/bases)
    "HyperNode": _object(
        _fields(
            "tier",
            "tierName",
            members=[
                _fields(
                    "type",
                    selector=_fields(
                        exactMatch=_fields("name"), regexMatch=_fields("pattern"), labelMatch=LABEL_SELECTOR
                    ),
                )
            ],
        )
    ),
    "PriorityClass": {
        key: METADATA if key == "metadata" else ANY
        for key in ("apiVersion", "kind", "metadata", "value", "globalDefault", "description", "preemptionPolicy")
    },
}


def unknown_fields(doc: Any, schema: Any) -> list[str]:
    """Return the paths of the fields of ``doc`` that ``schema`` does not know, and remove them from ``doc``."""
    found: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(doc, schema, "")]
    while stack:
        value, node, path = stack.pop()
        if isinstance(node, _Any):
            continue
        if isinstance(node, list):
            if isinstance(value, list):
                stack.extend((item, node[0], f"{path}[{i}]") for i, item in enumerate(value))
            continue
        if not isinstance(value, dict):
            continue  # a wrong type is the kind's validator's to report
        if isinstance(node, MapOf):
            stack.extend((child, node.values, f"{path}[{key}]") for key, child in value.items())
            continue
        for key in list(value):
            child_path = f"{path}.{key}" if path else str(key)
            if key in node:
                stack.append((value[key], node[key], child_path))
            else:
                found.append(child_path)
                del value[key]
    return sorted(found)


def check_mode(value: str | None) -> str:
    """Return the ``fieldValidation`` mode (default ``Strict``) or raise a 400 naming the parameter."""
    if value in (None, ""):
        return STRICT
    for mode in MODES:
        if value.lower() == mode.lower():
            return mode
    raise BadRequest(
        f'invalid fieldValidation value "{value}": must be one of Strict, Warn, Ignore',
        causes=[
            Cause(
                "fieldValidation",
                f'Unsupported value: "{value}": supported values: "Strict", "Warn", "Ignore"',
                "FieldValueNotSupported",
            )
        ],
    )


def validate_fields(
    documents: list[dict[str, Any]], mode: str, warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """Apply ``mode`` to the duplicate and unknown fields of ``documents``; return them without unknown fields.

    ``Strict`` raises a :class:`BadRequest` whose causes name every field (``FieldValueDuplicate``,
    ``FieldValueInvalid`` with ``unknown field``); ``Warn`` appends Kubernetes' warning texts to ``warnings``.
    Duplicate keys keep their last value, as Kubernetes does outside ``Strict``.
    """
    mode = check_mode(mode)
    causes: list[Cause] = []
    notes: list[str] = []
    for index, doc in enumerate(documents):
        where = f"document {index + 1}: " if len(documents) > 1 else ""
        for path in duplicate_fields(doc):
            causes.append(Cause(path, f'duplicate field "{path}"', "FieldValueDuplicate"))
            notes.append(f'{where}duplicate field "{path}"')
        schema = SCHEMAS.get(str(doc.get("kind")))
        if schema is None:
            continue
        for path in unknown_fields(doc, schema):
            causes.append(Cause(path, f'unknown field "{path}"', "FieldValueInvalid"))
            notes.append(f'{where}unknown field "{path}"')
    if causes and mode == STRICT:
        kind = str(documents[0].get("kind") or "") if len(documents) == 1 else ""
        raise BadRequest("strict decoding error: " + ", ".join(notes), kind=kind, causes=causes)
    if mode == WARN and warnings is not None:
        warnings.extend(notes)
    return documents


def warning_header(text: str) -> str:
    """Return one RFC 7234 ``Warning`` value as Kubernetes sends it: ``299 - "<text>"``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def check_body_fields(
    body: dict[str, Any], known: frozenset[str] | None, mode: str, warnings: list[str] | None = None
) -> dict[str, Any]:
    """Apply ``mode`` to the duplicate and unknown top-level keys of a small object body (not a manifest)."""
    mode = check_mode(mode)
    causes = [Cause(path, f'duplicate field "{path}"', "FieldValueDuplicate") for path in duplicate_fields(body)]
    if known is not None:
        for key in sorted(k for k in body if k not in known):
            causes.append(Cause(str(key), f'unknown field "{key}"', "FieldValueInvalid"))
            del body[key]
    if causes and mode == STRICT:
        raise BadRequest("strict decoding error: " + ", ".join(c.message for c in causes), causes=causes)
    if mode == WARN and warnings is not None:
        warnings.extend(c.message for c in causes)
    return body
