"""The scheduler's reasons as lines people read: the :class:`Reason` every explanation panel shows.

A stored JobReason (the core's ReasonKind, its numbers, its fit errors) becomes a headline, facts with
labels and the comparison the core made in the units people read (cores, GiB, GPUs rather than millicores
and bytes). The why-pending page (:mod:`volcanoweb.dashboard.diagnosis`), the Submit page's forecast
(:mod:`volcanoweb.dashboard.forecast`) and the insights' suggestions all speak through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from volcanoweb.dashboard import cluster
from volcanoweb.dashboard.resources import MAIN_RESOURCES, fmt
from volcanoweb.scheduling.messages import rewrite_vectors


@dataclass
class Reason:
    """One explanation line: where it comes from, a short title and details.

    Reasons from the scheduler also carry ``kind`` (the core's ReasonKind), ``facts`` (label, value)
    from its numbers, ``fit_errors`` (predicate message, node count) and ``cycle`` (the run id).
    """

    source: str
    title: str
    detail: str = ""
    severity: str = "warn"  # info | warn | block
    kind: str = ""
    plugin: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)
    fit_errors: list[tuple[str, int]] = field(default_factory=list)
    cycle: str = ""


#: The scheduler core's ReasonKind values (scheduler/result.py) as headlines people read.
KIND_TITLES = {
    "enqueue-rejected": "Not admitted: the queue or the cluster cannot take the whole gang",
    "never-fits": "Can never run: no node can hold its pods, even with the cluster empty",
    "queue-closed": "Its queue is closed",
    "queue-missing": "Its queue does not exist",
    "invalid": "Not enough pods exist for the gang",
    "queue-overused": "Its queue has used its deserved share",
    "capability-exceeded": "Its queue's capability is exhausted",
    "predicate-failure": "No node can run the pods",
    "gang-shortfall": "Only part of the gang fits",
    "not-reached": "Not reached in the last cycle",
    "network-topology": "No network domain its topology allows fits the gang",
}
#: Labels for the core's reason numbers (JobReason.numbers); others are shown with their key.
NUMBER_LABELS = {
    "requested": "Gang requests",
    "capability": "Queue may use (its real capability)",
    "deserved": "Queue deserved",
    "guarantee": "Queue guarantee",
    "queue_allocated": "Queue allocated",
    "inqueue": "Queue admitted (inqueue)",
    "elastic": "Elastic",
    "free": "Free in cluster",
    "idle": "Idle in cluster",
    "task": "Task",
    "per_pod": "Each pod asks",
    "largest_node": "Largest node it may use",
    "eligible_nodes": "Nodes its selector, affinity and tolerations admit",
    "fitting_pods": "Pods that fit some node",
    "minimum_pods": "Pods the gang needs",
    "holds": "Admission room it would hold",
}
COUNT_KEYS = ("min_available", "ready", "pending", "pipelined", "allocated", "total", "nodes")


def resource_label(name: str) -> str:
    return next((label for key, label, _ in MAIN_RESOURCES if key == name), name)


def vector_text(values: dict[str, Any]) -> str:
    """``2 CPU, 4 GiB, 8 GPU``: the main resources first, each amount with its unit."""
    main = {"cpu": "CPU", "memory": "GiB", "nvidia.com/gpu": "GPU"}
    units = {**main, "ephemeral-storage": "GiB ephemeral storage"}
    parts = [
        f"{fmt(k, v)} {units.get(k, k)}"
        for k, v in sorted(values.items(), key=lambda kv: (kv[0] not in main, kv[0]))
        if isinstance(v, int | float) and not isinstance(v, bool) and k != "pods"
    ]
    return ", ".join(parts) or "none"


def human_message(text: str) -> str:
    """Rewrite resource vectors the core prints in its units (``{'cpu': 8000, 'memory': 34359738368}``, millicores
    and bytes, as Volcano does) into the units people read (``8 CPU, 32 GiB``)."""
    return rewrite_vectors(text, vector_text)


def overcommit_factor() -> float | None:
    """The overcommit plugin's factor in the active configuration (None when the plugin is off)."""
    from volcanoweb.scheduling.cycles import active_config

    config, _version = active_config()
    for tier in config.tiers:
        for plugin in tier.plugins:
            if plugin.name == "overcommit":
                factor = float(plugin.arguments.get("overcommit-factor", 1.2))
                return factor if factor >= 1.0 else 1.2  # the plugin's own rule for a factor below 1
    return None


def reason_facts(numbers: dict[str, Any], plugin: str = "") -> list[tuple[str, str]]:
    """Turn a JobReason's ``numbers`` into (label, value) lines; empty vectors are left out."""
    facts: list[tuple[str, str]] = []
    counts = {k: numbers.get(k) for k in COUNT_KEYS if isinstance(numbers.get(k), int)}
    if "min_available" in counts:
        line = f"{counts.get('ready', 0)} of {counts['min_available']} minimum ready"
        if counts.get("total"):
            line += f" · {counts['total']} pods"
        if counts.get("pending"):
            line += f" · {counts['pending']} pending"
        if counts.get("pipelined"):
            line += f" · {counts['pipelined']} pipelined"
        facts.append(("Gang", line))
    if isinstance(numbers.get("nodes"), int):
        facts.append(("Nodes considered", str(numbers["nodes"])))
    factor = overcommit_factor() if plugin == "overcommit" and isinstance(numbers.get("idle"), dict) else None
    if factor is not None:
        facts += _overcommit_facts(numbers, factor)
    facts += _quota_facts(numbers)
    for key, value in numbers.items():
        if key in COUNT_KEYS or (key == "idle" and factor is not None):
            continue  # idle x factor, rounded by the core, is replaced by the exact comparison above
        if isinstance(value, dict):
            if value:
                facts.append((NUMBER_LABELS.get(key, key.replace("_", " ").capitalize()), vector_text(value)))
        elif isinstance(value, int | float | str) and not isinstance(value, bool) and value != "":
            facts.append((NUMBER_LABELS.get(key, key.replace("_", " ").capitalize()), str(value)))
    return facts


def _numbers(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _overcommit_facts(numbers: dict[str, Any], factor: float) -> list[tuple[str, str]]:
    """The overcommit plugin's comparison, with the cluster's figures now (as the Nodes page adds them up, to the
    unit): ``inqueue + requested > total x factor - used`` for each resource the gang asks."""
    nodes = [n for n in cluster.inventory() if n.ready]  # the scheduler's snapshot takes every Ready node
    total: dict[str, float] = {}
    for n in nodes:
        for k, v in n.allocatable.items():
            total[k] = total.get(k, 0.0) + float(v)
    used = cluster.allocated_total()
    requested, inqueue = _numbers(numbers.get("requested")), _numbers(numbers.get("inqueue"))
    free = {k: max(total.get(k, 0.0) - used.get(k, 0.0), 0.0) for k in total if k != "pods"}
    facts = [("Free in cluster (as on the Nodes page)", vector_text(free))]
    for name, want in sorted(requested.items()):
        if name == "pods" or not want:
            continue
        held = inqueue.get(name, 0.0)
        room = total.get(name, 0.0) * factor - used.get(name, 0.0)
        verdict = ">" if held + want > room + 1e-9 else "≤"
        unit = resource_unit(name)
        facts.append(
            (
                f"Decided on {resource_label(name)}",
                f"{fmt(name, held)} admitted (inqueue) + {fmt(name, want)} requested = {fmt(name, held + want)} {unit} "
                f"{verdict} {fmt(name, room)} {unit} admissible ({fmt(name, total.get(name, 0.0))} in the cluster "
                f"\u00d7 overcommit factor {factor:g} \u2212 {fmt(name, used.get(name, 0.0))} in use)",
            )
        )
    return facts


def _quota_facts(numbers: dict[str, Any]) -> list[tuple[str, str]]:
    """A queue quota refusal's comparison: ``requested + allocated + inqueue - elastic > capability``."""
    if "capability" not in numbers or "queue_allocated" not in numbers:
        return []
    requested, capability = _numbers(numbers.get("requested")), _numbers(numbers.get("capability"))
    allocated, inqueue = _numbers(numbers.get("queue_allocated")), _numbers(numbers.get("inqueue"))
    elastic = _numbers(numbers.get("elastic"))
    facts = []
    for name, want in sorted(requested.items()):
        if name == "pods" or name not in capability:
            continue
        total = want + allocated.get(name, 0.0) + inqueue.get(name, 0.0) - elastic.get(name, 0.0)
        verdict = ">" if total > capability[name] + 1e-9 else "≤"
        unit = resource_unit(name)
        facts.append(
            (
                f"Decided on {resource_label(name)}",
                f"{fmt(name, want)} requested + {fmt(name, allocated.get(name, 0.0))} allocated + "
                f"{fmt(name, inqueue.get(name, 0.0))} admitted \u2212 {fmt(name, elastic.get(name, 0.0))} elastic = "
                f"{fmt(name, total)} {unit} {verdict} {fmt(name, capability[name])} {unit} the queue may use",
            )
        )
    return facts


def scheduler_reason(data: dict[str, Any], cycle: str = "") -> Reason:
    """Build the panel line for one stored JobReason (``JobReason.to_json()``)."""
    kind = str(data.get("kind") or "")
    fit = data.get("fit_errors") or {}
    fit_errors = sorted(
        ((str(k), int(v)) for k, v in fit.items() if isinstance(v, int | float)), key=lambda kv: (-kv[1], kv[0])
    )
    numbers = data.get("numbers") if isinstance(data.get("numbers"), dict) else {}
    detail = human_message(str(data.get("message") or ""))
    if kind == "enqueue-rejected" and data.get("plugin") == "overcommit":
        detail += (
            " — “overused” is Volcano's word for the admission room: the minimum resources of every "
            "admitted gang count as taken, whether its pods run or not, so an idle cluster can be “overused”."
        )
    return Reason(
        "scheduler",
        KIND_TITLES.get(kind, kind.replace("-", " ").capitalize() or "Unschedulable"),
        detail,
        "info" if kind == "not-reached" else "block",
        kind=kind,
        plugin=str(data.get("plugin") or ""),
        facts=reason_facts(numbers or {}, str(data.get("plugin") or "")),
        fit_errors=fit_errors,
        cycle=cycle,
    )


def resource_unit(name: str) -> str:
    return {"cpu": "CPU", "memory": "GiB", "nvidia.com/gpu": "GPU"}.get(name, name)
