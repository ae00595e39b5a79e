"""Admission of CronJobs, JobFlows and JobTemplates, plus PodGroups and PriorityClasses."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.decode import ManifestError, hyper_node
from volcanoweb.core.errors import Errors
from volcanoweb.manifests.fields import (
    DNS1123_LABEL_MSG,
    DNS1123_SUBDOMAIN_RE,
    check_enum,
    check_resource_list,
    expect,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_str,
    show,
)
from volcanoweb.manifests.jobs import check_job_spec
from volcanoweb.workflows import cron

MAX_CRONJOB_NAME = 52


def check_cronjob(errors: Errors, name: str, spec: Any) -> dict[str, Any] | None:
    """Return the defaulted CronJob spec (CRD defaults), recording Volcano's CronJob webhook failures.

    Ours on top: ``spec.jobTemplate.spec`` must pass the Job checks that need no database, so a
    CronJob cannot schedule a Job that admission would reject.
    """
    if len(name) > MAX_CRONJOB_NAME:
        errors.add(
            "metadata.name",
            "cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)",
        )
    if spec is None:
        errors.required("spec")
        return None
    if not expect(errors, "spec", spec, dict, "object"):
        return None
    for field, message in cron.schedule_errors(spec.get("schedule"), spec.get("timeZone")):
        errors.add(field, message)
    get_int(errors, spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds", minimum=0)
    get_int(errors, spec, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit", minimum=0)
    get_int(errors, spec, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit", minimum=0)
    get_bool(errors, spec, "suspend", "spec.suspend")
    policy = spec.get("concurrencyPolicy")
    if policy is not None:
        check_enum(errors, "spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace"))
    template = spec.get("jobTemplate")
    if template is None:
        errors.required("spec.jobTemplate")
    elif expect(errors, "spec.jobTemplate", template, dict, "object"):
        get_map(errors, template, "metadata", "spec.jobTemplate.metadata")
        nested = Errors()
        check_job_spec(nested, template.get("spec"), f"{name}-0")
        for cause in nested.causes:
            errors.add(f"spec.jobTemplate.{cause.field}", cause.message, cause.reason)
    if errors:
        return None
    defaulted: dict[str, Any] = copy.deepcopy(spec)
    defaulted.setdefault("concurrencyPolicy", "Allow")
    defaulted.setdefault("suspend", False)
    defaulted.setdefault("successfulJobsHistoryLimit", 3)
    defaulted.setdefault("failedJobsHistoryLimit", 1)
    return defaulted


def check_jobflow(errors: Errors, spec: Any) -> dict[str, Any] | None:
    """Return the JobFlow spec after Volcano's checks: flow names, dependsOn targets forming a DAG."""
    if spec is None:
        errors.required("spec")
        return None
    if not expect(errors, "spec", spec, dict, "object"):
        return None
    flows = get_list(errors, spec, "flows", "spec.flows")
    policy = spec.get("jobRetainPolicy")
    if policy not in (None, ""):
        check_enum(errors, "spec.jobRetainPolicy", policy, ("retain", "delete"))
    graph = _flow_graph(errors, flows)
    if errors:
        return None
    for node, targets in graph.items():
        for target in targets:
            if target not in graph:
                errors.add("spec.flows", f"jobflow Flow is not DAG: vertex is not defined: {target}")
                return None
        if node in targets:
            errors.add("spec.flows", "jobflow Flow is not DAG")
            return None
    if _has_cycle(graph):
        errors.add("spec.flows", "jobflow Flow is not DAG")
        return None
    checked: dict[str, Any] = copy.deepcopy(spec)
    return checked


def _flow_graph(errors: Errors, flows: list[Any]) -> dict[str, list[str]]:
    """Check each flow (its name, unique, and its dependsOn targets); return the flows' dependsOn graph."""
    graph: dict[str, list[str]] = {}
    for i, flow in enumerate(flows):
        path = f"spec.flows[{i}]"
        if not expect(errors, path, flow, dict, "object"):
            continue
        flow_name = get_str(errors, flow, "name", f"{path}.name")
        if not flow_name:
            if flow.get("name") in (None, ""):
                errors.add(
                    f"{path}.name",
                    f"Invalid value: {show(flow.get('name'))}: "
                    f"spec.flows[{i}].name in body should be at least 1 chars long",
                    "FieldValueRequired",
                )
            continue
        if flow_name in graph:
            # Volcano's webhook lets a repeated name through and runs it once; a DAG with two
            # vertices of one name is almost always a mistake, so we refuse it (docs/controllers.md).
            errors.add(f"{path}.name", f'Duplicate value: "{flow_name}"', "FieldValueDuplicate")
            continue
        depends = get_map(errors, flow, "dependsOn", f"{path}.dependsOn")
        targets = get_list(errors, depends, "targets", f"{path}.dependsOn.targets")
        if not all(isinstance(t, str) for t in targets):
            errors.add(
                f"{path}.dependsOn.targets",
                "Invalid value: targets must be an array of strings",
                "FieldValueTypeInvalid",
            )
            continue
        graph.setdefault(flow_name, []).extend(targets)
    return graph


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    state: dict[str, int] = {}

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1 or (state.get(nxt) is None and visit(nxt)):
                return True
        state[node] = 2
        return False

    return any(state.get(node) is None and visit(node) for node in graph)


def check_jobtemplate(errors: Errors, name: str, spec: Any) -> dict[str, Any] | None:
    """Return a JobTemplate spec (a Job spec, stored as written) after the Job checks that need no database."""
    nested = Errors()
    check_job_spec(nested, spec, name)
    errors.causes.extend(nested.causes)
    return None if errors else copy.deepcopy(spec)


def check_podgroup(errors: Errors, spec: Any) -> dict[str, Any] | None:
    """Return the defaulted PodGroup spec (queue ``default``), recording type and networkTopology failures."""
    if spec is None:
        spec = {}
    if not expect(errors, "spec", spec, dict, "object"):
        return None
    get_int(errors, spec, "minMember", "spec.minMember", minimum=0)
    members = get_map(errors, spec, "minTaskMember", "spec.minTaskMember")
    for task, count in members.items():
        if expect(errors, f"spec.minTaskMember.{task}", count, int, "integer") and count < 0:
            errors.add(f"spec.minTaskMember.{task}", f"Invalid value: {count}: must be greater than or equal to 0")
    check_resource_list(errors, "spec.minResources", spec.get("minResources"))
    queue = get_str(errors, spec, "queue", "spec.queue")
    if queue and not DNS1123_SUBDOMAIN_RE.match(queue):
        errors.add("spec.queue", f"Invalid value: {show(queue)}: {DNS1123_LABEL_MSG}")
    get_str(errors, spec, "priorityClassName", "spec.priorityClassName")
    topologies = [("spec.networkTopology", spec.get("networkTopology"))]
    for i, sub in enumerate(get_list(errors, spec, "subGroupPolicy", "spec.subGroupPolicy")):
        if isinstance(sub, dict):
            path = f"spec.subGroupPolicy[{i}]"
            # The CRD's bounds: subGroupSize >= 1, minSubGroups >= 0; matchLabelKeys a list of label keys.
            get_int(errors, sub, "subGroupSize", f"{path}.subGroupSize", minimum=1)
            get_int(errors, sub, "minSubGroups", f"{path}.minSubGroups", minimum=0)
            for j, key in enumerate(get_list(errors, sub, "matchLabelKeys", f"{path}.matchLabelKeys")):
                expect(errors, f"{path}.matchLabelKeys[{j}]", key, str, "string")
            topologies.append((f"{path}.networkTopology", sub.get("networkTopology")))
    for path, topology in topologies:
        if (
            isinstance(topology, dict)
            and topology.get("highestTierAllowed") is not None
            and topology.get("highestTierName")
        ):
            errors.add(
                path, "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"
            )
    if errors:
        return None
    defaulted: dict[str, Any] = copy.deepcopy(spec)
    if not defaulted.get("queue"):
        defaulted["queue"] = "default"
    defaulted.setdefault("minMember", 0)
    return defaulted


MAX_USER_PRIORITY = 1_000_000_000


def check_hypernode(errors: Errors, name: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """Return {tier, tierName, members} of a HyperNode after the scheduler's checks (tier >= 0, members
    of type Node or HyperNode, one selector each: exactMatch, regexMatch or labelMatch, HyperNode
    members by exactMatch only)."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        errors.required("spec")
        return None
    try:
        hyper_node(doc, f"HyperNode {name}")
    except ManifestError as exc:
        errors.add(exc.field, exc.detail)
        return None
    return {
        "tier": int(spec.get("tier") or 0),
        "tierName": str(spec.get("tierName") or ""),
        "members": list(spec.get("members") or []),
    }


def check_priorityclass(errors: Errors, name: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """Return {value, globalDefault, description, preemptionPolicy} after Kubernetes' PriorityClass checks."""
    value = doc.get("value")
    if value is None:
        errors.required("value")
    elif expect(errors, "value", value, int, "integer") and value < -(2**31):
        errors.add("value", f"Invalid value: {value}: value in body must be a 32-bit integer")
    elif isinstance(value, int) and value > MAX_USER_PRIORITY:
        errors.add(
            "value",
            f"Invalid value: {value}: maximum allowed value of a user defined priority is {MAX_USER_PRIORITY}",
            "FieldValueForbidden",
        )
    if name.startswith("system-"):
        errors.add(
            "metadata.name",
            f"Invalid value: {show(name)}: priority class names with 'system-' prefix are reserved",
            "FieldValueForbidden",
        )
    get_bool(errors, doc, "globalDefault", "globalDefault")
    get_str(errors, doc, "description", "description")
    policy = doc.get("preemptionPolicy")
    if policy is not None:
        check_enum(errors, "preemptionPolicy", policy, ("PreemptLowerPriority", "Never"))
    if errors:
        return None
    return {
        "value": value,
        "globalDefault": bool(doc.get("globalDefault") or False),
        "description": doc.get("description") or "",
        "preemptionPolicy": policy or "PreemptLowerPriority",
    }
