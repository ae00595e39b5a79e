"""Run Volcano's own scheduler unit-test cases (kept as data) through our core.

Each YAML file under ``tests/scheduler/volcano_cases/`` reproduces one Go test file of the
``volcano-sh/volcano`` repository. Its layout::

    source: pkg/scheduler/actions/enqueue/enqueue_test.go
    tests:
    - go_test: TestEnqueue               # the Go test function
      actions: [enqueue]                 # the actions the Go test runs, in order
      tiers:                             # the Go test's tiers; only the switches it sets to
      - - {name: drf, enableJobOrder: true}   # true are on (a nil *bool is off in Go tests)
      cases:
      - name: "when podgroup status is inqueue"     # the Go case name, verbatim
        plugins: [drf, gang]               # optional: the builders the case registers (others
                                           # in the tiers are skipped, as Go's OpenSession does)
        nodes:     [{name: n1, cpu: "2", memory: 4Gi, pods: 10, labels: {}}]
        queues:    [{name: c1, weight: 1, capability: {cpu: "4"}}]
        podgroups: [{name: pg1, ns: c1, queue: c1, min: 2, phase: Inqueue}]
        pods:      [{ns: c1, name: p1, node: "", phase: Pending, req: {cpu: "1", memory: 1G}, pg: pg1}]
        expect:    {binds: {c1/p1: n1}, evicted: [], pipelined: {c1/pg1: [n1]}, status: {c1/pg1: Running}}

The objects are written out as the Kubernetes/Volcano manifests Volcano's builders create
(``util.BuildPod``, ``BuildPodGroup``, ``BuildQueue``, ``BuildNode``) and loaded by
``scheduler.decode``, the path ``python -m scheduler simulate`` takes. As in Volcano's tests,
every object has the same (zero) creation time, so ties fall to uids (pods: ``ns-name``), and
no ``default``/``root`` queue is added unless the case lists it.

``expect`` follows ``uthelper.TestCommonStruct.CheckAll``: ``binds`` is the exact bind map
(unless ``bind_num`` alone is given, Go's ``MinimalBindCheck``), ``evicted`` the exact multiset
of evicted pods, ``pipelined`` maps a job to the nodes its pipelined pods may sit on (at least
one must be pipelined), ``status`` the PodGroup phases after the session. ``scores`` (for Go tests that call
``ssn.NodeOrderFn(task, node)`` on a freshly opened session) maps ``ns/pod`` to the expected
node-order score on each node; it is compared with ``Session.node_scores`` before any action.
``predicates`` (for ``ssn.PredicateFn(task, node)``) maps ``ns/pod`` to the expected status code
on each node: 0 Success, 2 Unschedulable, 3 UnschedulableAndUnresolvable (the first failing filter).

``action_args`` (for Go tests that parse an action's arguments) maps an action to the argument values
it runs with once built from the case's ``configurations``.

A case we decide differently carries ``deviation: <reason>`` and ``ours:`` (our outcome, same
keys as ``expect``): the test then asserts our outcome exactly and that it differs from
Volcano's, so a fix makes it fail until the case is promoted. ``docs/scheduler.md`` lists them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from scheduler.config import SWITCHES, parse_config
from scheduler.config_types import SchedulerConfig
from scheduler.cycle import run_cycle
from scheduler.decode import NODE_USAGE, NODE_USAGE_TIME, snapshot_from_manifests
from scheduler.registry import default_registry
from scheduler.result import CycleResult
from scheduler.session import Session
from scheduler.snapshot import Snapshot

CASES_DIR = Path(__file__).parent / "volcano_cases"
#: The session's clock: Go's tests leave creation times at Go's zero time, so every PodGroup
#: (created_at 0 here) has waited about half a century by then.
NOW = 1.7e9
GROUP = "scheduling.k8s.io/group-name"
ALLOCATED_HYPERNODE = "volcano.sh/job-allocated-hypernode"


@dataclass(frozen=True)
class VolcanoCase:
    """One case of one Go test function."""

    file: str
    go_test: str
    name: str
    actions: tuple[str, ...]
    tiers: tuple[Any, ...]
    configurations: tuple[Any, ...]
    data: Mapping[str, Any]

    @property
    def id(self) -> str:
        return f"{Path(self.file).parent.name}:{self.go_test}:{self.name}"


def load_cases() -> Iterator[VolcanoCase]:
    """Yield every case of every file, in file order."""
    yield from _all_cases()


@cache
def _all_cases() -> tuple[VolcanoCase, ...]:
    """The cases, read once per process: five test modules select from them when collected, and each reading with
    PyYAML's pure-Python loader took 0.8 s (libyaml's takes 0.1 s)."""
    cases = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        for test in doc["tests"]:
            for case in test["cases"]:
                cases.append(
                    VolcanoCase(
                        doc["source"],
                        test["go_test"],
                        case["name"],
                        tuple(case.get("actions", test["actions"])),
                        tuple(case.get("tiers", test.get("tiers", ()))),
                        tuple(case.get("configurations", test.get("configurations", ()))),
                        case,
                    )
                )
    return tuple(cases)


def config_of(case: VolcanoCase) -> SchedulerConfig:
    """Return the case's configuration: Go's nil switches are off, so every switch the case
    does not set to true is written as false."""
    registered = case.data.get("plugins")
    tiers = []
    for tier in case.tiers:
        plugins = []
        for plugin in tier:
            if registered is not None and plugin["name"] not in registered:
                continue  # Go's OpenSession skips a configured plugin without a registered builder
            item = {"name": plugin["name"]}
            for switch in SWITCHES:
                item[switch] = bool(plugin.get(switch, False))
            if plugin.get("enableHierarchy"):
                item["enableHierarchy"] = True
            if plugin.get("arguments"):
                item["arguments"] = plugin["arguments"]
            unknown = set(plugin) - set(item) - set(SWITCHES) - {"enableHierarchy"}
            assert not unknown, f"{case.id}: unknown plugin keys {unknown}"
            plugins.append(item)
        tiers.append({"plugins": plugins})
    raw: dict[str, Any] = {"actions": ", ".join(case.actions), "tiers": tiers}
    if case.configurations:
        raw["configurations"] = list(case.configurations)
    return parse_config(raw)


def _res(values: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (values or {}).items()}


def _node_annotations(n: Mapping[str, Any]) -> dict[str, str]:
    """A node's annotations; ``usage: {cpu, memory, age}`` (percent over Volcano's ``NODE_METRICS_PERIOD``, 10m,
    measured ``age`` seconds before the clock, or at Go's zero time when ``age`` is absent) is written as the
    ``volcanoweb.io/node-usage`` annotations Volcano's metrics source fills in."""
    out = dict(n.get("annotations") or {})
    usage = n.get("usage")
    if usage:
        out[NODE_USAGE] = json.dumps({"10m": {"cpu": usage["cpu"], "memory": usage["memory"]}})
        if usage.get("age") is not None:
            out[NODE_USAGE_TIME] = _rfc3339(NOW - float(usage["age"]))
    return out


def manifests_of(case: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the case's objects as manifests shaped like Volcano's test builders make them."""
    docs: list[dict[str, Any]] = []
    for n in case.get("nodes", ()):
        alloc = _res(n.get("alloc")) or _res({k: n[k] for k in ("cpu", "memory") if k in n})
        for k, v in (n.get("scalars") or {}).items():
            alloc[k] = str(v)
        alloc["pods"] = str(n.get("pods", 0))  # as BuildNode: no pods entry means 0
        spec: dict[str, Any] = {}
        if n.get("taints"):
            spec["taints"] = list(n["taints"])
        if n.get("unschedulable"):
            spec["unschedulable"] = True
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": n["name"],
                    "labels": dict(n.get("labels") or {}),
                    "annotations": _node_annotations(n),
                },
                "spec": spec,
                "status": {"allocatable": alloc, "capacity": alloc},
            }
        )
    for h in case.get("hypernodes", ()):
        # As api.BuildHyperNode with exact members: Node members, then HyperNode members.
        members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in h.get("nodes", ())]
        members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}} for n in h.get("hypernodes", ())]
        hspec: dict[str, Any] = {"tier": h["tier"], "members": members}
        if h.get("tier_name"):
            hspec["tierName"] = h["tier_name"]
        docs.append(
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": {"name": h["name"]},
                "spec": hspec,
            }
        )
    for rq in case.get("resource_quotas", ()):
        # As util.BuildResourceQuota: spec.hard and status.hard alike, nothing used.
        hard = _res(rq["hard"])
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": rq["name"], "namespace": rq["ns"]},
                "spec": {"hard": hard},
                "status": {"hard": hard, "used": _res(rq.get("used"))},
            }
        )
    for pdb in case.get("pdbs", ()):
        # As the Go test's PodDisruptionBudget objects: a matchLabels selector and the status.
        docs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": pdb["name"], "namespace": pdb["ns"]},
                "spec": {"selector": {"matchLabels": dict(pdb["match_labels"])}},
                "status": {
                    "disruptionsAllowed": pdb.get("allowed", 0),
                    "disruptedPods": dict.fromkeys(pdb.get("disrupted", ()), "2024-01-01T00:00:00Z"),
                },
            }
        )
    for pc in case.get("priority_classes", ()):
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc["name"]},
                "value": pc["value"],
                **({"preemptionPolicy": pc["policy"]} if pc.get("policy") else {}),
            }
        )
    for q in case.get("queues", ()):
        qspec: dict[str, Any] = {"weight": q.get("weight", 1)}
        for key in ("capability", "deserved"):
            if q.get(key) is not None:
                qspec[key] = _res(q[key])
        if q.get("guarantee") is not None:
            qspec["guarantee"] = {"resource": _res(q["guarantee"])}
        if q.get("parent"):
            qspec["parent"] = q["parent"]
        if q.get("priority") is not None:
            qspec["priority"] = q["priority"]
        if q.get("reclaimable") is not None:
            qspec["reclaimable"] = q["reclaimable"]
        if q.get("affinity") is not None:
            qspec["affinity"] = q["affinity"]
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": q["name"], "annotations": dict(q.get("annotations") or {})},
                "spec": qspec,
                "status": {"state": q.get("state", "Open")},
            }
        )
    for pg in case.get("podgroups", ()):
        pgspec: dict[str, Any] = {"queue": pg["queue"], "minMember": pg.get("min", 0)}
        if pg.get("min_task_member"):
            pgspec["minTaskMember"] = dict(pg["min_task_member"])
        if pg.get("min_resources") is not None:
            pgspec["minResources"] = _res(pg["min_resources"])
        if pg.get("priority_class"):
            pgspec["priorityClassName"] = pg["priority_class"]
        if pg.get("topology") is not None:
            # util.BuildPodGroupWithNetWorkTopologies; an empty mode (a Go literal) is left out.
            pgspec["networkTopology"] = {k: v for k, v in pg["topology"].items() if v != ""}
        if pg.get("sub_group_policy") is not None:
            # util.BuildPodGroupWithSubGroupPolicy: accepted and ignored by the scheduler (deviation 18).
            pgspec["subGroupPolicy"] = list(pg["sub_group_policy"])
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {
                    "name": pg["name"],
                    "namespace": pg["ns"],
                    "annotations": dict(pg.get("annotations") or {}),
                },
                "spec": pgspec,
                "status": {"phase": pg.get("phase", "Pending")},
            }
        )
    for p in case.get("pods", ()):
        pspec: dict[str, Any] = {
            "containers": [{"name": "c", "resources": {"requests": _res(p.get("req"))}}],
            "nodeSelector": dict(p.get("selector") or {}),
        }
        if p.get("node"):
            pspec["nodeName"] = p["node"]
        if p.get("priority") is not None:
            pspec["priority"] = p["priority"]
        if p.get("priority_class"):
            pspec["priorityClassName"] = p["priority_class"]
        if p.get("preemption_policy"):
            pspec["preemptionPolicy"] = p["preemption_policy"]
        for key in ("affinity", "tolerations", "topologySpreadConstraints"):
            if p.get(key):
                pspec[key] = p[key]
        meta: dict[str, Any] = {
            "name": p["name"],
            "namespace": p["ns"],
            "uid": f"{p['ns']}-{p['name']}",
            "labels": dict(p.get("labels") or {}),
            "annotations": {GROUP: p.get("pg", ""), **dict(p.get("annotations") or {})},
        }
        if p.get("deleting"):
            meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        status: dict[str, Any] = {"phase": p.get("phase", "Pending")}
        if p.get("scheduled_ago") is not None:
            # A PodScheduled condition that turned true this many seconds before the session's clock.
            status["conditions"] = [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": _rfc3339(NOW - p["scheduled_ago"])}
            ]
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": pspec,
                "status": status,
            }
        )
    return docs


def _rfc3339(seconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def victim_problems(case: VolcanoCase, expect: Mapping[str, Any]) -> list[str]:
    """Return how the victims the ``preemptable`` / ``reclaimable`` votes allow (``ssn.Preemptable``
    and ``ssn.Reclaimable`` over every Running/Bound preemptable pod of another job; see
    ``scheduler.explain.victims``) for the pending pods of ``case.data["victims_of"]`` miss
    ``expect["victims"]``."""
    from scheduler.explain import victims

    session = Session(snapshot_of(case.data), config_of(case), default_registry())
    got = victims(session, case.data["victims_of"])
    problems: list[str] = []
    for pod, want in expect["victims"].items():
        for vote, names in want.items():
            have = got.get(pod, {}).get(vote)
            if have != sorted(names):
                problems.append(f"{vote} victims of {pod}: want {sorted(names)}, got {have}")
    return problems


def victim_task_problems(case: VolcanoCase, expect: Mapping[str, Any]) -> list[str]:
    """Return how the number of ``ssn.VictimTasks`` of an opened session misses ``expect["victim_task_count"]``."""
    session = Session(snapshot_of(case.data), config_of(case), default_registry())
    got = session.victim_tasks()
    want = expect["victim_task_count"]
    return [] if len(got) == want else [f"victim tasks: want {want}, got {len(got)} ({[t.key for t in got]})"]


def snapshot_of(case: Mapping[str, Any]) -> Snapshot:
    """Return the case's snapshot: every object created at the same instant, no implicit queues."""
    snap = snapshot_from_manifests(enumerate(manifests_of(case), 1))
    declared = {q["name"] for q in case.get("queues", ())}
    return Snapshot.of(
        snap.nodes,
        [replace(q, creation=0) for q in snap.queues if q.name in declared],
        [replace(j, creation=0) for j in snap.jobs],
        [replace(t, creation=0) for t in snap.tasks],
        snap.priority_classes,
        now=NOW,
        resource_quotas=snap.resource_quotas,
        pod_disruption_budgets=snap.pod_disruption_budgets,
        hyper_nodes=snap.hyper_nodes,
    )


def run_case(case: VolcanoCase) -> CycleResult:
    """Run one session of the case's actions."""
    return run_cycle(snapshot_of(case.data), config_of(case))


def score_problems(case: VolcanoCase, expect: Mapping[str, Any]) -> list[str]:
    """Return how the node-order scores (``expect["scores"]``: ``ns/pod`` -> node -> score; Go
    compares within 1e-6) and predicate codes (``expect["predicates"]``) of a freshly opened
    session miss ``expect``."""
    session = Session(snapshot_of(case.data), config_of(case), default_registry())
    tasks = {t.key: t for job in session.jobs.values() for t in job.tasks.values()}
    for pg in case.data.get("podgroups", ()):
        # The Go tests' parseTask: the task's JobAllocatedHyperNode is the PodGroup's annotation.
        spans = (pg.get("annotations") or {}).get(ALLOCATED_HYPERNODE)
        if spans:
            session.job_hyper_nodes[f"{pg['ns']}/{pg['name']}"] = spans
    tolerance = float(case.data.get("score_tolerance", 1e-6))
    names = list(session.nodes.names)
    problems: list[str] = []
    for key, codes in (expect.get("predicates") or {}).items():
        if key not in tasks:
            problems.append(f"predicates: no task {key}")
            continue
        filters = session.filters(tasks[key])
        for node, code in codes.items():
            i = names.index(node)
            failing = next((f for f in filters if not f.passed[i]), None)
            got = 0 if failing is None else (3 if failing.unresolvable else 2)
            if got != code:
                why = "" if failing is None else f" ({failing.plugin}: {failing.reason_at(i)})"
                problems.append(f"predicate of {key} on {node}: want code {code}, got {got}{why}")
    for key, reasons in (expect.get("predicate_reasons") or {}).items():
        filters = session.filters(tasks[key])
        for node, reason in reasons.items():
            i = names.index(node)
            failing = next((f for f in filters if not f.passed[i]), None)
            got_reason = "" if failing is None else failing.reason_at(i)
            if got_reason != reason:
                problems.append(f"predicate reason of {key} on {node}: want {reason!r}, got {got_reason!r}")
    for key, want in (expect.get("scores") or {}).items():
        if key not in tasks:
            problems.append(f"scores: no task {key}")
            continue
        # The nodes the Go test scores (its scoreNodes; all by default), in the order given.
        chosen = case.data.get("score_nodes") or names
        got_at = session.node_scores(tasks[key], np.array([names.index(n) for n in chosen], dtype=np.intp))
        got = np.zeros(len(names), dtype=np.float64)
        got[[names.index(n) for n in chosen]] = got_at
        for node, score in want.items():
            value = float(got[names.index(node)])
            if abs(value - float(score)) > tolerance:
                problems.append(f"score of {key} on {node}: want {score}, got {value}")
    for job_key, want in (expect.get("hypernode_scores") or {}).items():
        job = session.jobs[job_key]
        names = sorted(session.topology.tier)
        got_h = session.hyper_node_scores(job, names)
        for name, score in want.items():
            if abs(got_h.get(name, 0.0) - float(score)) > tolerance:
                problems.append(f"HyperNode score of {job_key} on {name}: want {score}, got {got_h.get(name)}")
    return problems


def action_arg_problems(case: VolcanoCase, expect: Mapping[str, Any]) -> list[str]:
    """Return how the arguments the case's actions run with (built from its configuration) miss
    ``expect["action_args"]``."""
    config = config_of(case)
    actions = default_registry().actions
    problems: list[str] = []
    for name, want in expect["action_args"].items():
        got = actions[name](config.action_args.get(name, {})).args
        for key, value in want.items():
            if got.get(key) != value:
                problems.append(f"{name}.{key}: want {value!r}, got {got.get(key)!r}")
    return problems


def outcome_problems(case: VolcanoCase, result: CycleResult, expect: Mapping[str, Any]) -> list[str]:
    """Return how ``result`` misses ``expect`` (empty: it matches), as CheckAll would report it."""
    problems: list[str] = []
    binds = dict(result.binds)
    if "bind_nums_in_hypernode" in expect:
        # CheckBindInHyperNode: binds counted per node's lowest HyperNode, in any order.
        session = Session(snapshot_of(case.data), config_of(case), default_registry())
        topo = session.topology
        per: dict[str, int] = {}
        for node in binds.values():
            leaf = topo.leaf[session.nodes.index[node]]
            per[leaf] = per.get(leaf, 0) + 1
        if sorted(per.values()) != sorted(expect["bind_nums_in_hypernode"]):
            problems.append(f"binds per HyperNode: want {expect['bind_nums_in_hypernode']}, got {per}")
    if ("binds" in expect or "bind_num" not in expect) and "bind_nums_in_hypernode" not in expect:
        want = {str(k): str(v) for k, v in (expect.get("binds") or {}).items()}
        if binds != want:
            problems.append(f"binds: want {want}, got {binds}")
    if "bind_num" in expect and len(binds) != expect["bind_num"]:
        problems.append(f"bind count: want {expect['bind_num']}, got {len(binds)} ({binds})")
    evicted = sorted(e.task for e in result.evictions)
    if "evicted" in expect or "evict_num" not in expect:
        want_e = sorted(expect.get("evicted") or ())
        if evicted != want_e:
            problems.append(f"evicted: want {want_e}, got {evicted}")
    if "evict_num" in expect and len(evicted) != expect["evict_num"]:
        problems.append(f"evict count: want {expect['evict_num']}, got {len(evicted)} ({evicted})")
    for job, nodes in (expect.get("pipelined") or {}).items():
        ns = job.split("/", 1)[0]
        pg_pods = {
            f"{ns}/{p['name']}"
            for p in case.data.get("pods", ())
            if p["ns"] == ns and p.get("pg") == job.split("/", 1)[1]
        }
        got = {t: n for t, n in result.pipelined.items() if t in pg_pods}
        if not got:
            problems.append(f"pipelined: want {job} pipelined to {nodes}, none is ({dict(result.pipelined)})")
        for task, node in got.items():
            if node not in nodes:
                problems.append(f"pipelined: {task} on {node}, want one of {nodes}")
    phases: dict[str, str] = {}
    snap_phases = {j.key: str(j.phase) for j in snapshot_of(case.data).jobs}
    phases.update(snap_phases)
    phases.update(result.podgroups)
    for job, phase in (expect.get("status") or {}).items():
        if phases.get(job) != phase:
            problems.append(f"status of {job}: want {phase}, got {phases.get(job)}")
    return problems
