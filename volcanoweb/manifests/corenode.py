"""The core v1 Node of a mirrored cluster node, as a kubelet reports it (labels, taints, capacity,
allocatable, conditions, addresses, nodeInfo), for the Kubernetes API and the REST API alike."""

from __future__ import annotations

from typing import Any

from scheduler.quantity import format_quantity
from scheduler.vgpu import VGPU_REGISTER, register_text, simulated_cards
from volcanoweb.clusters.backends.base import VGPU_LABEL
from volcanoweb.manifests.render import timestamp

#: What the simulated kubelet reports about itself (a real cluster's nodes keep their own labels).
KUBELET_VERSION = "v1.32.0-volcanoweb-sim"
ROLE_PREFIX = "node-role.kubernetes.io/"


def quantities(vector: dict[str, int]) -> dict[str, str]:
    """Integer resources (the scheduler's units) as Kubernetes quantities."""
    return {name: format_quantity(name, int(amount)) for name, amount in sorted(vector.items())}


def node_manifest(node: Any) -> dict[str, Any]:
    """Return the core v1 Node of a :class:`volcanoweb.clusters.models.Node` row."""
    labels = dict(node.labels or {})
    meta: dict[str, Any] = {
        "name": node.name,
        "uid": f"node-{node.pk}",
        "resourceVersion": str(node.resource_version),  # the change log's revision (ADR 0024)
        "creationTimestamp": timestamp(node.created_at),
        "labels": labels,
    }
    registered = _vgpu_registration(node.name, labels)
    if registered:
        meta["annotations"] = {VGPU_REGISTER: registered}
    spec: dict[str, Any] = {}
    if node.taints:
        spec["taints"] = list(node.taints)
    if node.unschedulable:
        spec["unschedulable"] = True
    heartbeat = timestamp(node.updated_at)
    conditions = [
        {"lastHeartbeatTime": heartbeat, "lastTransitionTime": heartbeat, **dict(c)}
        for c in node.conditions or [{"type": "Ready", "status": "True" if node.ready else "False"}]
        if isinstance(c, dict)
    ]
    hostname = labels.get("kubernetes.io/hostname", node.name)
    status: dict[str, Any] = {
        "capacity": quantities(node.capacity or node.allocatable or {}),
        "allocatable": quantities(node.allocatable or {}),
        "conditions": conditions,
        "addresses": [{"type": "Hostname", "address": hostname}],
        "nodeInfo": {
            "architecture": labels.get("kubernetes.io/arch", "amd64"),
            "operatingSystem": labels.get("kubernetes.io/os", "linux"),
            "osImage": "volcanoweb simulated node" if "sim.volcanoweb.io/pool" in labels else "",
            "kernelVersion": "",
            "containerRuntimeVersion": "",
            "kubeletVersion": KUBELET_VERSION if "sim.volcanoweb.io/pool" in labels else "",
            "kubeProxyVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def _vgpu_registration(name: str, labels: dict[str, str]) -> str:
    """The ``volcano.sh/node-vgpu-register`` annotation of a simulated node with vGPU cards (as the vGPU device
    plugin writes it), "" for none."""
    try:
        count, memory, split = (int(x) for x in labels.get(VGPU_LABEL, "").split("x"))
    except ValueError:
        return ""
    return register_text(simulated_cards(name, count, memory, split))


def roles(obj: dict[str, Any]) -> str:
    """ROLES: the ``node-role.kubernetes.io/<role>`` labels, or ``<none>``."""
    found = sorted(k[len(ROLE_PREFIX) :] for k in (obj["metadata"].get("labels") or {}) if k.startswith(ROLE_PREFIX))
    return ",".join(r for r in found if r) or "<none>"


def status_text(obj: dict[str, Any]) -> str:
    """STATUS: Ready / NotReady / Unknown, with ``,SchedulingDisabled`` for a cordoned node."""
    ready = next((c for c in obj["status"].get("conditions") or [] if c.get("type") == "Ready"), None)
    text = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    return text + (",SchedulingDisabled" if obj["spec"].get("unschedulable") else "")


def internal_ip(obj: dict[str, Any]) -> str:
    """INTERNAL-IP."""
    found = [a["address"] for a in obj["status"].get("addresses") or [] if a.get("type") == "InternalIP"]
    return found[0] if found else "<none>"


def external_ip(obj: dict[str, Any]) -> str:
    """EXTERNAL-IP."""
    found = [a["address"] for a in obj["status"].get("addresses") or [] if a.get("type") == "ExternalIP"]
    return found[0] if found else "<none>"


def node_info(key: str, obj: dict[str, Any]) -> str:
    """A ``status.nodeInfo`` field, ``<unknown>`` when empty (as kubectl prints)."""
    return str(obj["status"].get("nodeInfo", {}).get(key) or "<unknown>")
