"""The sla plugin: waiting time from the annotation or argument, the caller's clock, job order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler import parse_config, run_cycle
from scheduler.config import ConfigError
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.model import JobPhase
from scheduler.testing import make_job, make_node, make_queue, make_snapshot

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - {name: sla, arguments: {sla-waiting-time: 10m}}
  - {name: gang}
- plugins:
  - {name: proportion}
  - {name: predicates}
"""


@pytest.mark.parametrize(("value", "why"), [("3x", "invalid duration"), ("1", "expected a string"), ("0s", "positive")])
def test_a_bad_waiting_time_argument_loads_without_it_and_warns_naming_it(value: str, why: str) -> None:
    """Volcano logs a bad sla-waiting-time (wrong type or syntax) and runs without a default waiting time:
    the configuration loads here too, without the argument, and its warnings name the path and reason."""
    text = 'actions: "enqueue"\ntiers: [{plugins: [{name: sla, arguments: {sla-waiting-time: %s}}]}]'
    cfg = parse_config(text % value)
    [sla] = cfg.tiers[0].plugins
    assert "sla-waiting-time" not in sla.arguments
    [warning] = cfg.warnings
    assert warning.startswith("tiers[0].plugins[0].arguments.sla-waiting-time: ")
    assert why in warning
    assert "ignored: no default waiting time" in warning


def test_other_bad_arguments_are_still_refused_naming_them() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config('actions: "enqueue"\ntiers: [{plugins: [{name: sla, arguments: {sla-waiting: 3m}}]}]')
    assert err.value.path == "tiers[0].plugins[0].arguments.sla-waiting"


def _snapshot(now: float | None):
    # The queue's capability (1 CPU) refuses the 2-CPU job: only sla can admit it, once it waited.
    big = make_job("big", queue="q", replicas=2, cpu="1", memory="1Gi", phase=JobPhase.PENDING, min_resources="auto")
    big = replace(big, job=replace(big.job, created_at=1000.0))
    snap = make_snapshot(
        [make_node("n1", cpu="4", memory="8Gi")], [big], [make_queue("q", capability={"cpu": "1", "memory": "8Gi"})]
    )
    return replace(snap, now=now)


def test_a_job_past_its_sla_is_admitted_the_clock_is_the_callers() -> None:
    cfg = parse_config(CONF)
    assert run_cycle(_snapshot(None), cfg).podgroups.get("default/big") is None  # no clock: never waited
    assert run_cycle(_snapshot(1000.0 + 599), cfg).podgroups.get("default/big") is None
    assert run_cycle(_snapshot(1000.0 + 600), cfg).podgroups["default/big"] == "Inqueue"


def test_job_order_by_deadline_and_the_annotation_wins_over_the_argument() -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 4Gi, pods: "10"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: early, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec: {minMember: 1}
status: {phase: Inqueue}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: urgent, namespace: default, creationTimestamp: "2024-01-01T00:05:00Z",
           annotations: {sla-waiting-time: 1m}}
spec: {minMember: 1}
status: {phase: Inqueue}
"""
    for name in ("early", "urgent"):
        text += f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}-0, namespace: default, annotations: {{scheduling.k8s.io/group-name: {name}}}}}
spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]}}
"""
    snap = snapshot_from_manifests(load_manifests(text))
    jobs = {j.name: j for j in snap.jobs}
    assert jobs["urgent"].sla_waiting_time == 60.0
    assert jobs["urgent"].created_at - jobs["early"].created_at == 300.0
    # early's deadline is 00:10 (argument 10m), urgent's 00:06 (annotation 1m): urgent goes first.
    assert run_cycle(snap, parse_config(CONF)).binds == {"default/urgent-0": "n1"}
    without_sla = CONF.replace("  - {name: sla, arguments: {sla-waiting-time: 10m}}\n", "")
    assert run_cycle(snap, parse_config(without_sla)).binds == {"default/early-0": "n1"}


def test_a_bad_annotation_names_the_field() -> None:
    text = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: default, annotations: {sla-waiting-time: soon}}
spec: {minMember: 1}
"""
    with pytest.raises(ManifestError) as err:
        snapshot_from_manifests(load_manifests(text))
    assert err.value.field == "metadata.annotations.sla-waiting-time"
