"""The simulated cluster engine's transitions as one table, run against BOTH stores.

Every row is a scenario of calls and expectations; each runs on ``SimCluster`` (the in-memory store of
the unit tests) and on ``DatabaseSimCluster`` (the database store of the product), so the two cannot
drift apart again (ADR 0014). Steps are tuples:

* ``("create", name, {option: value})``: a pod asking 1 CPU and 1 GiB; options ``cpu``, ``duration``,
  ``exit_code``, ``restart_policy``, ``node_selector``;
* ``("bind", name, node)``, ``("tick",)``, ``("advance", seconds)`` (the clock, then a tick),
  ``("clock", seconds)`` (the clock only), ``("fail_pod", name, code)``, ``("restart", name, code)``,
  ``("evict", name)``, ``("delete", name, grace)``, ``("fail_node", node, evict)``, ``("recover_node", node)``,
  ``("remove_node", node)``, ``("add_node", name)``, ``("cordon", node)``, ``("annotate", name, {k: v})``;
* ``("raises", Error, step)``: the step fails with that error and changes nothing;
* ``("pod", name, {field: value})``: the pod as observed (``None``: it is gone);
* ``("node", name, {field: value})`` and ``("usage", node, {resource: integer})``;
* ``("events", [(kind, type, name, phase or reason)])``: what ``poll_events`` returns (and consumes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from volcanoweb.clusters.backends.base import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    BackendEvent,
    ClusterBackend,
    Conflict,
    Container,
    NodeInfo,
    NotFound,
    PodInfo,
    PodSpec,
)
from volcanoweb.clusters.backends.sim import ManualClock, SimCluster
from volcanoweb.clusters.backends.simdb import DatabaseSimCluster

pytestmark = pytest.mark.django_db  # for the database store (the memory store ignores it)

POOL = "cpu:2x4c8Gi,small:1x4c8Gi1pods,gpu:1x8c32Gi2gpu[accelerator=a100]"
NS = "ns"

Step = tuple[Any, ...]


@dataclass
class Sim:
    """A simulated cluster on a manual clock, whichever its store."""

    backend: SimCluster | DatabaseSimCluster
    clock: ManualClock


@pytest.fixture(params=["memory", "database"])
def make_sim(request: pytest.FixtureRequest) -> Any:
    """Build a sim with settings on the parametrized store (the database one on the test database)."""

    def make(**options: float) -> Sim:
        clock = ManualClock(0.0)
        if request.param == "memory":
            return Sim(SimCluster(POOL, clock=clock, **options), clock)
        return Sim(DatabaseSimCluster(POOL, clock=clock, **options), clock)

    return make


def spec(name: str, options: dict[str, Any]) -> PodSpec:
    annotations = {}
    if "duration" in options:
        annotations[SIM_DURATION_ANNOTATION] = options["duration"]
    if "exit_code" in options:
        annotations[SIM_EXIT_CODE_ANNOTATION] = options["exit_code"]
    return PodSpec(
        NS,
        name,
        [Container("main", "img", requests={"cpu": options.get("cpu", "1"), "memory": "1Gi"})],
        annotations=annotations,
        restart_policy=options.get("restart_policy", "Never"),
        node_selector=options.get("node_selector", {}),
    )


def describe(event: BackendEvent) -> tuple[str, str, str, str]:
    obj = event.object
    if isinstance(obj, PodInfo):
        return (event.kind, event.type, obj.name, obj.reason if event.type == "DELETED" else obj.phase)
    assert isinstance(obj, NodeInfo)
    return (event.kind, event.type, obj.name, "Ready" if obj.ready else "NotReady")


def act(sim: Sim, step: Step) -> None:
    backend: Any = sim.backend
    op, *args = step
    if op == "create":
        backend.create_pod(spec(args[0], args[1] if len(args) > 1 else {}))
    elif op == "bind":
        backend.bind(NS, args[0], args[1])
    elif op == "tick":
        backend.tick()
    elif op == "advance":
        sim.clock.advance(args[0])
        backend.tick()
    elif op == "clock":
        sim.clock.advance(args[0])
    elif op == "fail_pod":
        backend.fail_pod(NS, args[0], exit_code=args[1])
    elif op == "restart":
        backend.restart_container(NS, args[0], exit_code=args[1])
    elif op == "evict":
        backend.evict(NS, args[0])
    elif op == "delete":
        assert backend.delete_pod(NS, args[0], args[1]) is args[2]
    elif op == "fail_node":
        backend.fail_node(args[0], evict_pods=args[1])
    elif op == "recover_node":
        backend.recover_node(args[0])
    elif op == "remove_node":
        backend.remove_node(args[0])
    elif op == "add_node":
        backend.add_node(NodeInfo(args[0], allocatable={"cpu": "2", "memory": "4Gi"}))
    elif op == "cordon":
        backend.cordon(args[0])
    elif op == "annotate":
        backend.patch_pod_annotations(NS, args[0], args[1])
    else:
        raise AssertionError(f"unknown step {step!r}")


def check(sim: Sim, step: Step) -> None:
    backend: ClusterBackend = sim.backend
    op, *args = step
    if op == "raises":
        error, inner = args
        before = (backend.list_pods(), backend.list_nodes())
        with pytest.raises(error):
            act(sim, inner)
        assert (backend.list_pods(), backend.list_nodes()) == before, "a failed call changed the cluster"
    elif op == "pod":
        name, fields = args
        if fields is None:
            assert name not in {p.name for p in backend.list_pods()}
            with pytest.raises(NotFound):
                backend.get_pod(NS, name)
            return
        pod = backend.get_pod(NS, name)
        assert {k: getattr(pod, k) for k in fields} == fields, name
    elif op == "node":
        name, fields = args
        node = next(n for n in backend.list_nodes() if n.name == name)
        assert {k: getattr(node, k) for k in fields} == fields, name
    elif op == "usage":
        used = sim.backend.node_usage(args[0])
        assert {k: used.get(k, 0) for k in args[1]} == args[1]
    elif op == "events":
        assert [describe(e) for e in backend.poll_events()] == args[0]
    else:
        act(sim, step)


RUN_30S: list[Step] = [("create", "p", {"duration": "30s"}), ("bind", "p", "cpu-0")]
NODES_ADDED = [("node", "ADDED", n, "Ready") for n in ("cpu-0", "cpu-1", "small-0", "gpu-0")]


def started(*names: str) -> list[tuple[str, str, str, str]]:
    """The events of pods created, then bound, then started by one tick."""
    return [
        *(("pod", "ADDED", n, "Pending") for n in names),
        *(("pod", "MODIFIED", n, "Pending") for n in names),
        *(("pod", "MODIFIED", n, "Running") for n in names),
    ]


#: (id, sim options, steps)
TABLE: list[tuple[str, dict[str, float], list[Step]]] = [
    (
        "bind, start, run for the annotated duration, succeed",
        {},
        [
            ("events", NODES_ADDED),
            *RUN_30S,
            ("events", started("p")),
            ("pod", "p", {"node_name": "cpu-0", "started_at": 0.0, "finished_at": None}),
            ("usage", "cpu-0", {"cpu": 1000, "memory": 1024**3, "pods": 1}),
            ("advance", 29),
            ("events", []),
            ("advance", 1),
            ("pod", "p", {"phase": "Succeeded", "exit_code": 0, "reason": "Completed", "finished_at": 30.0}),
            ("usage", "cpu-0", {"cpu": 0, "memory": 0, "pods": 0}),
            ("events", [("pod", "MODIFIED", "p", "Succeeded")]),
        ],
    ),
    (
        "startup delay and default duration",
        {"startup_delay": 2, "default_duration": 10},
        [
            ("create", "p"),
            ("bind", "p", "cpu-0"),
            ("advance", 1.5),
            ("pod", "p", {"phase": "Pending"}),
            ("advance", 0.5),
            ("pod", "p", {"phase": "Running", "started_at": 2.0}),
            ("advance", 10),
            ("pod", "p", {"phase": "Succeeded", "finished_at": 12.0}),
        ],
    ),
    (
        "an unbound pod stays pending",
        {},
        [("create", "p"), ("advance", 3600), ("pod", "p", {"phase": "Pending", "node_name": ""})],
    ),
    (
        "the exit-code annotation fails the pod; a bad one is exit code 1",
        {},
        [
            ("create", "three", {"duration": "5m", "exit_code": "3"}),
            ("create", "bad", {"duration": "5m", "exit_code": "oops"}),
            ("bind", "three", "cpu-0"),
            ("bind", "bad", "cpu-1"),
            ("advance", 300),
            ("pod", "three", {"phase": "Failed", "exit_code": 3, "reason": "Error"}),
            ("pod", "bad", {"phase": "Failed", "exit_code": 1, "reason": "Error"}),
        ],
    ),
    (
        "an injected failure ends the pod now and its finish timer never fires",
        {},
        [
            *RUN_30S,
            ("tick",),
            ("events", NODES_ADDED + started("p")),
            ("clock", 5),
            ("fail_pod", "p", 137),
            ("pod", "p", {"phase": "Failed", "exit_code": 137, "reason": "Error", "finished_at": 5.0}),
            ("usage", "cpu-0", {"cpu": 0}),
            ("events", [("pod", "MODIFIED", "p", "Failed")]),
            ("advance", 3600),
            ("events", []),
            ("raises", Conflict, ("fail_pod", "p", 1)),
        ],
    ),
    (
        "an injected exit code 0 ends the pod Succeeded (the product's semantics)",
        {},
        [*RUN_30S, ("tick",), ("fail_pod", "p", 0), ("pod", "p", {"phase": "Succeeded", "exit_code": 0})],
    ),
    (
        "the kubelet rejects an overcommit, a node selector mismatch and a full pod slot",
        {},
        [
            ("create", "big", {"cpu": "3"}),
            ("create", "big2", {"cpu": "2"}),
            ("create", "gpuonly", {"node_selector": {"accelerator": "a100"}}),
            ("create", "s1"),
            ("create", "s2"),
            ("bind", "big", "cpu-0"),
            ("bind", "big2", "cpu-0"),
            ("bind", "gpuonly", "cpu-1"),
            ("bind", "s1", "small-0"),
            ("bind", "s2", "small-0"),
            ("tick",),
            ("pod", "big", {"phase": "Running"}),
            ("pod", "big2", {"phase": "Failed", "reason": "OutOfcpu", "exit_code": None}),
            ("pod", "gpuonly", {"phase": "Failed", "reason": "NodeAffinity"}),
            ("pod", "s1", {"phase": "Running"}),
            ("pod", "s2", {"phase": "Failed", "reason": "OutOfpods"}),
            ("usage", "cpu-0", {"cpu": 3000, "pods": 1}),
            ("usage", "cpu-1", {"cpu": 0, "pods": 0}),
        ],
    ),
    (
        "binding errors: twice, unknown pod or node, a pod being deleted; a name taken",
        {"delete_grace": 30},
        [
            *RUN_30S,
            ("raises", Conflict, ("bind", "p", "cpu-1")),
            ("raises", NotFound, ("bind", "missing", "cpu-0")),
            ("create", "q"),
            ("raises", NotFound, ("bind", "q", "no-such-node")),
            ("raises", Conflict, ("create", "q")),
            ("pod", "q", {"node_name": ""}),
        ],
    ),
    (
        "eviction deletes at once with reason Evicted and frees the node",
        {},
        [
            *RUN_30S,
            ("tick",),
            ("events", NODES_ADDED + started("p")),
            ("evict", "p"),
            ("events", [("pod", "DELETED", "p", "Evicted")]),
            ("pod", "p", None),
            ("usage", "cpu-0", {"cpu": 0}),
            ("raises", NotFound, ("evict", "p")),
        ],
    ),
    (
        "a graceful delete keeps the node's resources until the pod is removed",
        {"delete_grace": 30},
        [
            ("create", "p", {"duration": "1h"}),
            ("bind", "p", "cpu-0"),
            ("tick",),
            ("clock", 10),
            ("delete", "p", None, True),
            ("pod", "p", {"deleting": True, "phase": "Running"}),
            ("raises", Conflict, ("bind", "p", "cpu-1")),
            ("delete", "p", 0, True),  # already deleting: nothing changes
            ("advance", 29),
            ("pod", "p", {"deleting": True, "phase": "Running"}),
            ("usage", "cpu-0", {"cpu": 1000}),
            ("advance", 1),  # removed at 10 + 30 s
            ("pod", "p", None),
            ("usage", "cpu-0", {"cpu": 0}),
            ("delete", "p", None, False),
        ],
    ),
    (
        "a graceful eviction of a pod bound but not started, and a delete of an unbound pod",
        {"delete_grace": 30, "startup_delay": 5},
        [
            ("create", "bound"),
            ("create", "unbound"),
            ("bind", "bound", "cpu-0"),
            ("evict", "bound"),
            ("pod", "bound", {"deleting": True, "phase": "Pending", "reason": "Evicted"}),
            ("advance", 10),
            ("pod", "bound", {"phase": "Pending"}),  # its start timer was disarmed
            ("delete", "unbound", 30, True),
            ("pod", "unbound", None),
            ("advance", 20),
            ("pod", "bound", None),
        ],
    ),
    (
        "a node failure evicts its pods (NodeLost); a pod bound to it waits for the recovery",
        {},
        [
            ("create", "a"),
            ("create", "b"),
            ("create", "other"),
            ("bind", "a", "cpu-0"),
            ("bind", "b", "cpu-0"),
            ("bind", "other", "cpu-1"),
            ("tick",),
            ("events", NODES_ADDED + started("a", "b", "other")),
            ("fail_node", "cpu-0", True),
            (
                "events",
                [
                    ("node", "MODIFIED", "cpu-0", "NotReady"),
                    ("pod", "DELETED", "a", "NodeLost"),
                    ("pod", "DELETED", "b", "NodeLost"),
                ],
            ),
            ("node", "cpu-0", {"ready": False}),
            ("usage", "cpu-0", {"cpu": 0, "pods": 0}),
            ("pod", "other", {"phase": "Running"}),
            ("create", "late"),
            ("bind", "late", "cpu-0"),
            ("advance", 5),
            ("pod", "late", {"phase": "Pending", "node_name": "cpu-0"}),
            ("recover_node", "cpu-0"),
            ("node", "cpu-0", {"ready": True, "taints": []}),
            ("tick",),
            ("pod", "late", {"phase": "Running", "started_at": 5.0}),
        ],
    ),
    (
        "a node failure can fail the pods instead; removing a node fails its pods",
        {},
        [
            ("create", "a"),
            ("create", "b"),
            ("create", "done", {"duration": "1s"}),
            ("bind", "a", "cpu-0"),
            ("bind", "b", "cpu-1"),
            ("bind", "done", "cpu-1"),
            ("advance", 1),
            ("fail_node", "cpu-0", False),
            ("pod", "a", {"phase": "Failed", "reason": "NodeLost", "message": "node cpu-0 failed"}),
            ("remove_node", "cpu-1"),
            ("pod", "b", {"phase": "Failed", "reason": "NodeLost"}),
            ("pod", "done", {"phase": "Succeeded", "reason": "Completed"}),
            ("raises", NotFound, ("remove_node", "cpu-1")),
            ("raises", NotFound, ("recover_node", "cpu-1")),
        ],
    ),
    (
        "nodes: add (a name taken conflicts), cordon",
        {},
        [
            ("add_node", "extra"),
            ("raises", Conflict, ("add_node", "extra")),
            ("cordon", "extra"),
            ("node", "extra", {"unschedulable": True, "ready": True}),
            ("create", "p"),
            ("bind", "p", "extra"),
            ("tick",),
            ("usage", "extra", {"cpu": 1000}),
        ],
    ),
    (
        "timers fire in simulated-time order",
        {},
        [
            ("create", "slow", {"duration": "20s"}),
            ("create", "fast", {"duration": "10s"}),
            ("bind", "slow", "cpu-0"),
            ("bind", "fast", "cpu-0"),
            ("tick",),
            # both start at t=0: ties go by pod key
            (
                "events",
                [
                    *NODES_ADDED,
                    *started("slow", "fast")[:4],
                    ("pod", "MODIFIED", "fast", "Running"),
                    ("pod", "MODIFIED", "slow", "Running"),
                ],
            ),
            ("advance", 60),
            ("events", [("pod", "MODIFIED", "fast", "Succeeded"), ("pod", "MODIFIED", "slow", "Succeeded")]),
            ("pod", "fast", {"finished_at": 10.0}),
            ("pod", "slow", {"finished_at": 20.0}),
        ],
    ),
    (
        "every call reads the clock, not only the kubelet's tick",
        {"delete_grace": 5},
        [
            ("clock", 7),
            ("create", "p"),
            ("pod", "p", {"created_at": 7.0}),
            ("bind", "p", "cpu-0"),
            ("clock", 3),
            ("tick",),
            ("pod", "p", {"started_at": 7.0}),  # due at bind time (7), fired at the tick (10)
        ],
    ),
    (
        "annotations patch with a new resourceVersion",
        {},
        [
            ("create", "p"),
            ("annotate", "p", {"a": "1", "b": "2"}),
            ("annotate", "p", {"a": None}),
            ("pod", "p", {"annotations": {"b": "2"}}),
            ("raises", NotFound, ("annotate", "missing", {"a": "1"})),
        ],
    ),
]

RESTARTS = [("OnFailure", 1, True), ("OnFailure", 0, False), ("Always", 0, True), ("Never", 137, False)]


@pytest.mark.parametrize(("options", "steps"), [(o, steps) for _, o, steps in TABLE], ids=[t[0] for t in TABLE])
def test_transition(make_sim: Any, options: dict[str, float], steps: list[Step]) -> None:
    sim = make_sim(**options)
    for step in steps:
        check(sim, step)


@pytest.mark.parametrize(("policy", "code", "restarted"), RESTARTS)
def test_container_exit_follows_the_restart_policy(make_sim: Any, policy: str, code: int, restarted: bool) -> None:
    sim = make_sim()
    for step in [
        ("create", "p", {"duration": "100s", "restart_policy": policy}),
        ("bind", "p", "cpu-0"),
        ("advance", 60),
        ("restart", "p", code),
    ]:
        check(sim, step)
    if not restarted:
        phase = "Failed" if code else "Succeeded"
        reason = "Error" if code else "Completed"
        check(sim, ("pod", "p", {"phase": phase, "exit_code": code, "restart_count": 0, "reason": reason}))
        check(sim, ("usage", "cpu-0", {"cpu": 0}))
        check(sim, ("raises", Conflict, ("restart", "p", 1)))
        return
    for step in [
        ("pod", "p", {"phase": "Running", "restart_count": 1, "exit_code": None}),
        ("usage", "cpu-0", {"cpu": 1000}),  # still holds its node
        ("advance", 60),  # past the first run's end (100 s): the restarted run goes on until 160 s
        ("pod", "p", {"phase": "Running"}),
        ("restart", "p", 2),
        ("pod", "p", {"restart_count": 2}),
        ("advance", 99),
        ("pod", "p", {"phase": "Running"}),
        ("advance", 1),
        ("pod", "p", {"phase": "Succeeded", "finished_at": 220.0}),
    ]:
        check(sim, step)


def test_restart_errors(make_sim: Any) -> None:
    sim = make_sim()
    check(sim, ("create", "p"))
    check(sim, ("raises", Conflict, ("restart", "p", 1)))
    check(sim, ("raises", NotFound, ("restart", "missing", 1)))


def test_batches_report_each_pod(make_sim: Any) -> None:
    backend = make_sim().backend
    created = backend.create_pods([spec("a", {}), spec("b", {}), spec("a", {})])
    assert isinstance(created[("ns", "a")], Conflict)
    assert isinstance(created[("ns", "b")], PodInfo)
    assert [p.name for p in backend.list_pods()] == ["a", "b"]
    results = backend.bind_many([("ns", "a", "cpu-0"), ("ns", "a", "cpu-1"), ("ns", "x", "cpu-0"), ("ns", "b", "nope")])
    assert results[("ns", "x")].__class__ is NotFound
    assert results[("ns", "b")].__class__ is NotFound
    conflict = results[("ns", "a")]
    assert isinstance(conflict, Conflict)
    assert "cpu-0" in str(conflict)  # the message names the node it is bound to
    assert backend.get_pod("ns", "a").node_name == "cpu-0"


def test_usage_and_settings_are_integers_and_shared_semantics(make_sim: Any) -> None:
    backend = make_sim(default_duration=42).backend
    assert backend.settings()["default_duration"] == 42
    assert backend.node_usage("gpu-0") == {}
    with pytest.raises(NotFound):
        backend.node_usage("nope")


def test_simulated_log_stops_progress_at_the_planned_finish(make_sim: Any) -> None:
    sim = make_sim()
    for step in [("create", "p", {"duration": "20s"}), ("bind", "p", "cpu-0"), ("tick",), ("clock", 60)]:
        check(sim, step)
    log = sim.backend.pod_log(NS, "p")  # no tick yet: the clock is past the planned end
    assert "running: 20s of 20s" in log
    assert "running: 30s" not in log


def test_services_config_maps_and_secrets_are_idempotent(make_sim: Any) -> None:
    from volcanoweb.clusters.backends.base import ServiceSpec

    backend = make_sim().backend
    assert backend.ensure_service(ServiceSpec(NS, "job", selector={"a": "b"})) is True
    assert backend.ensure_service(ServiceSpec(NS, "job")) is False
    assert backend.get_object("service", NS, "job")["selector"] == {"a": "b"}
    assert backend.ensure_config_map(NS, "cm", {"k": "v"}) is True
    assert backend.ensure_config_map(NS, "cm", {}) is False
    assert backend.get_object("configmap", NS, "cm")["data"] == {"k": "v"}
    assert backend.ensure_secret(NS, "s", {"id_rsa": "k"}) is True
    assert backend.get_object("secret", NS, "s")["type"] == "Opaque"
    assert backend.delete_service(NS, "job") is True
    assert backend.delete_service(NS, "job") is False
    assert backend.delete_config_map(NS, "cm") is True
    assert backend.delete_secret(NS, "s") is True
    assert backend.get_object("secret", NS, "s") is None
