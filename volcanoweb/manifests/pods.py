"""Pod specs: the subset of Kubernetes pod validation we reproduce, effective requests, and Pod admission."""

from __future__ import annotations

import re
from typing import Any

from scheduler.decode import ManifestError, pod_placement
from volcanoweb.core.errors import Errors
from volcanoweb.manifests.fields import (
    check_dns_label,
    check_enum,
    check_resource_list,
    expect,
    get_int,
    get_list,
    get_map,
    get_str,
    show,
)

RESTART_POLICIES = ("Always", "OnFailure", "Never")
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
_PERCENT_RE = re.compile(r"^([1-9][0-9]?)%$")


def _check_containers(errors: Errors, spec: dict[str, Any], path: str, key: str) -> list[dict[str, Any]]:
    containers = get_list(errors, spec, key, f"{path}.{key}")
    seen: set[str] = set()
    checked: list[dict[str, Any]] = []
    for j, container in enumerate(containers):
        cpath = f"{path}.{key}[{j}]"
        if not expect(errors, cpath, container, dict, "object"):
            continue
        name = get_str(errors, container, "name", f"{cpath}.name")
        if not name:
            if container.get("name") is None or container.get("name") == "":
                errors.required(f"{cpath}.name")
        else:
            check_dns_label(errors, f"{cpath}.name", name)
            if name in seen:
                errors.add(f"{cpath}.name", f"Duplicate value: {show(name)}", "FieldValueDuplicate")
            seen.add(name)
        image = get_str(errors, container, "image", f"{cpath}.image")
        if not image and container.get("image") in (None, ""):
            errors.required(f"{cpath}.image")
        for list_key in ("command", "args"):
            values = get_list(errors, container, list_key, f"{cpath}.{list_key}")
            for k, item in enumerate(values):
                expect(errors, f"{cpath}.{list_key}[{k}]", item, str, "string")
        for p, port in enumerate(get_list(errors, container, "ports", f"{cpath}.ports")):
            if expect(errors, f"{cpath}.ports[{p}]", port, dict, "object"):
                number = get_int(errors, port, "containerPort", f"{cpath}.ports[{p}].containerPort")
                if number is None and port.get("containerPort") is None:
                    errors.required(f"{cpath}.ports[{p}].containerPort")
                elif number is not None and not 1 <= number <= 65535:
                    errors.add(
                        f"{cpath}.ports[{p}].containerPort",
                        f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                    )
        resources = get_map(errors, container, "resources", f"{cpath}.resources")
        requests = check_resource_list(errors, f"{cpath}.resources.requests", resources.get("requests"))
        limits = check_resource_list(errors, f"{cpath}.resources.limits", resources.get("limits"))
        for resource, amount in requests.items():
            if resource in limits and amount > limits[resource]:
                errors.add(
                    f"{cpath}.resources.requests",
                    f"Invalid value: {show(str(resources['requests'][resource]))}: must be less than or equal to "
                    f"{resource} limit of {resources['limits'][resource]}",
                )
        checked.append(container)
    return checked


def check_pod_spec(errors: Errors, spec: Any, path: str) -> None:
    """Check the parts of a PodSpec we validate: containers (name, image, ports, resources), restartPolicy."""
    if not expect(errors, path, spec, dict, "object"):
        return
    if not spec.get("containers"):
        errors.required(f"{path}.containers")
    _check_containers(errors, spec, path, "containers")
    _check_containers(errors, spec, path, "initContainers")
    policy = spec.get("restartPolicy")
    if policy is not None:
        check_enum(errors, f"{path}.restartPolicy", policy, RESTART_POLICIES)
    for key in ("schedulerName", "priorityClassName", "nodeName", "serviceAccountName"):
        get_str(errors, spec, key, f"{path}.{key}")
    get_map(errors, spec, "nodeSelector", f"{path}.nodeSelector")
    get_list(errors, spec, "tolerations", f"{path}.tolerations")
    get_list(errors, spec, "volumes", f"{path}.volumes")
    _check_placement(errors, spec, path)


def _check_placement(errors: Errors, spec: dict[str, Any], path: str) -> None:
    """Refuse what the scheduler cannot read: node affinity, tolerations, required pod anti-affinity and
    topology spread constraints go through the core's converter (the one the scheduling snapshot uses)."""
    try:
        pod_placement(spec)
    except ManifestError as exc:
        errors.add(path + exc.field.removeprefix("spec"), f"Invalid value: {exc.detail}")


def check_pod_template(errors: Errors, template: Any, path: str) -> None:
    """Check a PodTemplateSpec (``metadata`` + ``spec``)."""
    if template is None:
        errors.required(path)
        return
    if not expect(errors, path, template, dict, "object"):
        return
    get_map(errors, template, "metadata", f"{path}.metadata")
    if template.get("spec") is None:
        errors.required(f"{path}.spec")
        return
    check_pod_spec(errors, template.get("spec"), f"{path}.spec")


def pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """Return a pod's effective requests in scheduler units.

    Kubernetes rule: per resource, max(Σ containers, max over init containers); a container's
    request defaults to its limit. Assumes the spec passed :func:`check_pod_spec`.
    """
    errors = Errors()  # quantities were checked already; ignore anything odd

    def container_requests(container: dict[str, Any]) -> dict[str, int]:
        resources = container.get("resources") or {}
        merged = dict(check_resource_list(errors, "", resources.get("limits")))
        merged.update(check_resource_list(errors, "", resources.get("requests")))
        return merged

    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict):
            for name, amount in container_requests(container).items():
                total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        if isinstance(container, dict):
            for name, amount in container_requests(container).items():
                total[name] = max(total.get(name, 0), amount)
    return total


def check_jdb_annotations(errors: Errors, annotations: dict[str, str]) -> None:
    """Volcano's pod webhook: jdb annotations are a positive int or 1%-99%, and not both at once."""
    present = [key for key in (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE) if key in annotations]
    if len(present) == 2:
        errors.add(
            "metadata.annotations",
            f"not allow configure multiple annotations {present} at same time",
            "FieldValueForbidden",
        )
    for key in present:
        value = annotations[key]
        ok = (value.isdigit() and int(value) > 0) or bool(_PERCENT_RE.match(value))
        if not ok:
            errors.add(
                f"metadata.annotations.{key}",
                f"invalid value <{value}> for {key}, it must be a valid integer or percentage between 1% and 99%",
            )
