"""The hostile-input corpus: bodies an attacker with a valid token would send, and what each must answer.

Each entry is data: a name, a body builder, the expected cause field (``None``: only the message is checked)
and a piece of the expected message. ``GENERIC`` bodies are sent to every write endpoint; ``MANIFESTS`` only
to the manifest endpoints (they name fields of a kind).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.volcanoweb.builders import job_manifest, queue_manifest, task, to_yaml

NS = "team-a"


@dataclass(frozen=True)
class Hostile:
    """One hostile body and the 400 it must get."""

    id: str
    body: Callable[[], bytes]
    field: str | None
    message: str
    content_type: str = "application/yaml"


def deep_json(levels: int) -> bytes:
    """A Job whose ``spec.tasks[0].template`` hides ``levels`` nested objects (about 6 KB for 1,000)."""
    doc = json.dumps(job_manifest(namespace=NS, queue="ml-training"))
    nested = '{"a":' * levels + "1" + "}" * levels
    return doc.replace('"tasks": [', f'"deep": {nested}, "tasks": [', 1).encode()


def deep_yaml(levels: int) -> bytes:
    """A Job with ``levels`` nested flow mappings under ``spec``."""
    return (
        to_yaml(job_manifest(namespace=NS, queue="ml-training")) + "  deep: " + "{a: " * levels + "1" + "}" * levels
    ).encode()


def deep_yaml_block(levels: int) -> bytes:
    """Nested block sequences (``- - - - x``), the indentation-free way to go deep in YAML."""
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  x:\n  " + "- " * levels + "x\n").encode()


def alias_bomb(levels: int, width: int = 9) -> bytes:
    """The "billion laughs": ``levels`` anchors each made of ``width`` aliases of the previous one, in an unknown
    field of a Job; it expands to ``width ** levels`` values (639 bytes for 7 levels of 9)."""
    lines = ['l0: &l0 "lol"']
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * width) + "]")
    bomb = "\n".join("    " + line for line in lines)
    return (to_yaml(job_manifest(namespace=NS, queue="ml-training")) + "  bogus:\n" + bomb + "\n").encode()


def raw(text: str | bytes) -> Callable[[], bytes]:
    return lambda: text if isinstance(text, bytes) else text.encode()


def job_yaml(text_spec: str) -> Callable[[], bytes]:
    """A Job in team-a whose spec is given as YAML text (to repeat keys, which a dict cannot)."""
    head = f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: train\n  namespace: {NS}\n"
    return raw(head + "spec:\n" + text_spec)


TASK_YAML = (
    "  tasks:\n  - name: worker\n    replicas: 1\n    template:\n      spec:\n        containers:\n"
    "        - name: main\n          image: busybox\n"
)


def with_quantity(value: Any) -> Callable[[], bytes]:
    return lambda: to_yaml(
        job_manifest("big", namespace=NS, queue="ml-training", tasks=[task(cpu=value)])  # type: ignore[arg-type]
    ).encode()


def doc_with(kind_doc: dict[str, Any], path: str, value: Any) -> Callable[[], bytes]:
    """``kind_doc`` with an unknown field added at a dotted path (numbers index lists)."""

    def build() -> bytes:
        doc = json.loads(json.dumps(kind_doc))
        target: Any = doc
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        target[last] = value
        return to_yaml(doc).encode()

    return build


def cron() -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": NS},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"queue": "ml-training", "tasks": [task()]}}},
    }


def podgroup() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": NS},
        "spec": {"minMember": 1, "queue": "ml-training"},
    }


def jobflow() -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "flow", "namespace": NS},
        "spec": {"flows": [{"name": "a"}]},
    }


def jobtemplate() -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "a", "namespace": NS},
        "spec": {"queue": "ml-training", "tasks": [task()]},
    }


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def priorityclass() -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 5}


JOB = job_manifest(namespace=NS, queue="ml-training")
QUEUE = queue_manifest("hostile-q")

#: Bodies every write endpoint must refuse before anything else (the parser's limits).
GENERIC = [
    Hostile("deep-json-1000", lambda: deep_json(1000), "", "nested deeper than 40 levels", "application/json"),
    Hostile("deep-json-100000", lambda: deep_json(100_000), "", "nested deeper than 40 levels", "application/json"),
    Hostile("deep-json-41", lambda: deep_json(41), "", "nested deeper than 40 levels", "application/json"),
    Hostile("deep-json-array", raw("[" * 5000 + "]" * 5000), "", "nested deeper than 40 levels", "application/json"),
    Hostile("deep-yaml-flow-1000", lambda: deep_yaml(1000), "", "nested deeper than 40 levels"),
    Hostile("deep-yaml-block-5000", lambda: deep_yaml_block(5000), "", "nested deeper than 40 levels"),
    Hostile("alias-bomb-6x9", lambda: alias_bomb(6), "", "values once aliases are expanded"),
    Hostile("alias-bomb-7x9", lambda: alias_bomb(7), "", "values once aliases are expanded"),
    Hostile("alias-bomb-12x9", lambda: alias_bomb(12), "", "values once aliases are expanded"),
    Hostile("alias-bomb-40x2", lambda: alias_bomb(39, width=2), "", "values once aliases are expanded"),
    Hostile("invalid-utf8", raw(b"apiVersion: v1\nkind: Pod\nmetadata: {name: \xff\xfe}\n"), "", "not valid UTF-8"),
    Hostile("invalid-utf8-json", raw(b'{"name": "\xc3\x28"}'), "", "not valid UTF-8", "application/json"),
    Hostile("nul-in-value", raw('{"name": "a\\u0000b", "kind": "Pod"}'), "", "NUL characters", "application/json"),
    Hostile("nul-in-key", raw('{"na\\u0000me": "a", "kind": "Pod"}'), "", "NUL characters", "application/json"),
    Hostile("nul-raw-yaml", raw(b"name: a\x00b\n"), "", "unacceptable character #x0000"),
    Hostile(
        "yaml-python-tag",
        raw("name: !!python/object/apply:os.system ['true']\n"),
        "",
        "could not determine a constructor",
    ),
    Hostile("yaml-recursive-alias", raw("name: &a {b: *a}\n"), "", "recursive"),
    Hostile("not-an-object", raw("[1, 2, 3]"), None, "", "application/json"),
    Hostile("huge-integer", raw('{"name": 1' + "0" * 400 + "}"), None, "", "application/json"),
]

#: Manifests that name a field of a kind (sent to the apply, simulate and jobs endpoints).
MANIFESTS = [
    Hostile(
        "duplicate-top-level-key",
        job_yaml("  queue: ml-training\n" + TASK_YAML + "  queue: ci-cd\n"),
        "spec.queue",
        "duplicate field",
    ),
    Hostile(
        "duplicate-in-task",
        job_yaml("  queue: ml-training\n" + TASK_YAML.replace("replicas: 1\n", "replicas: 1\n    replicas: 3\n")),
        "spec.tasks[0].replicas",
        "duplicate field",
    ),
    Hostile(
        "duplicate-json-key",
        raw(json.dumps(JOB).replace('"kind": "Job"', '"kind": "Job", "kind": "Job"')),
        "kind",
        "duplicate field",
        "application/json",
    ),
    Hostile("unknown-spec-field", doc_with(JOB, "spec.bogusField", 1), "spec.bogusField", "unknown field"),
    Hostile("unknown-top-level", doc_with(JOB, "extra", {"a": 1}), "extra", "unknown field"),
    Hostile("unknown-metadata", doc_with(JOB, "metadata.nickname", "x"), "metadata.nickname", "unknown field"),
    Hostile("unknown-task", doc_with(JOB, "spec.tasks.0.replica", 3), "spec.tasks[0].replica", "unknown field"),
    Hostile(
        "unknown-container",
        doc_with(JOB, "spec.tasks.0.template.spec.containers.0.imagee", "x"),
        "spec.tasks[0].template.spec.containers[0].imagee",
        "unknown field",
    ),
    Hostile(
        "unknown-podspec",
        doc_with(JOB, "spec.tasks.0.template.spec.nodeSelectorr", {}),
        "spec.tasks[0].template.spec.nodeSelectorr",
        "unknown field",
    ),
    Hostile(
        "unknown-resources",
        doc_with(JOB, "spec.tasks.0.template.spec.containers.0.resources.request", {"cpu": "1"}),
        "spec.tasks[0].template.spec.containers[0].resources.request",
        "unknown field",
    ),
    Hostile(
        "unknown-policy",
        doc_with(
            job_manifest(namespace=NS, queue="ml-training", policies=[{"event": "PodEvicted", "action": "RestartJob"}]),
            "spec.policies.0.actoin",
            "x",
        ),
        "spec.policies[0].actoin",
        "unknown field",
    ),
    Hostile(
        "unknown-toleration",
        doc_with(pod(), "spec.tolerations", [{"key": "gpu", "operator": "Exists", "efect": "NoSchedule"}]),
        "spec.tolerations[0].efect",
        "unknown field",
    ),
    Hostile("unknown-queue", doc_with(QUEUE, "spec.wieght", 3), "spec.wieght", "unknown field"),
    Hostile(
        "unknown-queue-guarantee",
        doc_with(QUEUE, "spec.guarantee.resources", {}),
        "spec.guarantee.resources",
        "unknown field",
    ),
    Hostile("unknown-cronjob", doc_with(cron(), "spec.scheduel", "x"), "spec.scheduel", "unknown field"),
    Hostile(
        "unknown-cronjob-template",
        doc_with(cron(), "spec.jobTemplate.spec.quee", "x"),
        "spec.jobTemplate.spec.quee",
        "unknown field",
    ),
    Hostile("unknown-podgroup", doc_with(podgroup(), "spec.minMembers", 2), "spec.minMembers", "unknown field"),
    Hostile(
        "unknown-jobflow", doc_with(jobflow(), "spec.flows.0.dependson", {}), "spec.flows[0].dependson", "unknown field"
    ),
    Hostile(
        "unknown-jobtemplate", doc_with(jobtemplate(), "spec.minAvailabel", 1), "spec.minAvailabel", "unknown field"
    ),
    Hostile(
        "unknown-pod",
        doc_with(pod(), "spec.containers.0.imagePullPolicyy", "x"),
        "spec.containers[0].imagePullPolicyy",
        "unknown field",
    ),
    Hostile("unknown-priorityclass", doc_with(priorityclass(), "valu", 3), "valu", "unknown field"),
    Hostile(
        "cpu-9999999999999Ei",
        with_quantity("9999999999999Ei"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "must be at most",
    ),
    Hostile(
        "cpu-32-digits",
        with_quantity("99999999999999999999999999999999"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "must be at most",
    ),
    Hostile(
        "cpu-tiny",
        with_quantity("0.0000000001m"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "multiple of 1n",
    ),
    Hostile(
        "cpu-1e-12",
        with_quantity("1e-12"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "multiple of 1n",
    ),
    Hostile(
        "cpu-8Ei",
        with_quantity("8Ei"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "must be at most",
    ),
    Hostile(
        "cpu-exponent",
        with_quantity("1e500"),
        "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
        "quantities must match",
    ),
    Hostile(
        "queue-capability-huge",
        lambda: to_yaml(queue_manifest("hostile-q", capability={"memory": "99999999Ei"})).encode(),
        "spec.capability[memory]",
        "must be at most",
    ),
]
