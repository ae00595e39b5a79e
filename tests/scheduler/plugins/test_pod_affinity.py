"""Inter-pod affinity (issue 15): required pod affinity and anti-affinity filtered by predicates,
preferred pod affinity and anti-affinity scored by nodeorder (``podaffinity.weight``), as
Kubernetes' InterPodAffinity plugin that Volcano calls. Table cases read the filter's node mask
and the score of every node for the pending pod ``new``."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from scheduler import parse_config, run_cycle
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.registry import default_registry
from scheduler.session import Session

FILTER = parse_config(
    'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion}]\n"
)
SCORE = parse_config(
    'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder, arguments: "
    "{leastrequested.weight: 0, balancedresource.weight: 0, nodeaffinity.weight: 0, tainttoleration.weight: 0, "
    "podtopologyspread.weight: 0, podaffinity.weight: 1}}]\n"
)
HOST = "kubernetes.io/hostname"
#: a and b in zone z1, c in z2, d without a zone.
NODES = {"a": "z1", "b": "z1", "c": "z2", "d": None}


def _doc(obj: dict[str, Any]) -> str:
    return "---\n" + json.dumps(obj) + "\n"


def _node(name: str, zone: str | None) -> str:
    labels = {HOST: name} | ({"zone": zone} if zone else {})
    return _doc(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "20"}},
        }
    )


def _pod(name: str, app: str, node: str = "", affinity: dict[str, Any] | None = None, ns: str = "default") -> str:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    group = _doc(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"minMember": 1},
            "status": {"phase": "Running" if node else "Inqueue"},
        }
    )
    return group + _doc(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"app": app},
                "annotations": {"scheduling.k8s.io/group-name": name},
            },
            "spec": spec,
            "status": {"phase": "Running" if node else "Pending"},
        }
    )


def _term(app: str, key: str = "zone", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def _required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def _preferred(kind: str, *weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in weighted
            ]
        }
    }


def _session(text: str, config: Any) -> tuple[Session, Any]:
    nodes = "".join(_node(n, z) for n, z in NODES.items())
    session = Session(snapshot_from_manifests(load_manifests(nodes + text)), config, default_registry())
    task = next(t for j in session.jobs.values() for t in j.tasks.values() if t.task.name == "new")
    return session, task


def _passing(text: str) -> list[str]:
    session, task = _session(text, FILTER)
    mask = session.predicate_mask(task)
    return [n.name for n, ok in zip(session.nodes.nodes, mask.tolist(), strict=True) if ok]


def _scores(text: str) -> dict[str, float]:
    session, task = _session(text, SCORE)
    nodes = np.arange(len(session.nodes.nodes), dtype=np.int64)
    scores = session.node_scores(task, nodes).tolist()
    return {n.name: s for n, s in zip(session.nodes.nodes, scores, strict=True)}


AFF, ANTI = "podAffinity", "podAntiAffinity"

FILTER_CASES = [
    # (name, pods, nodes that pass for "new")
    (
        "affinity to a zone holding the pod",
        _pod("db", "db", "b") + _pod("new", "web", affinity=_required(AFF, _term("db"))),
        ["a", "b"],
    ),
    (
        "affinity on hostname",
        _pod("db", "db", "c") + _pod("new", "web", affinity=_required(AFF, _term("db", HOST))),
        ["c"],
    ),
    (
        "no matching pod anywhere: nothing passes",
        _pod("db", "db", "b") + _pod("new", "web", affinity=_required(AFF, _term("cache"))),
        [],
    ),
    (
        "first of its group: matches its own term, every node with the key passes",
        _pod("new", "web", affinity=_required(AFF, _term("web"))),
        ["a", "b", "c"],
    ),
    (
        "not first: a matching pod exists, so its domain only",
        _pod("web", "web", "c") + _pod("new", "web", affinity=_required(AFF, _term("web"))),
        ["c"],
    ),
    (
        "two terms: a domain needs a pod matching both",
        _pod("db", "db", "a") + _pod("new", "web", affinity=_required(AFF, _term("db"), _term("db", HOST))),
        ["a"],
    ),
    (
        "a pod in another namespace matches only when the term names it",
        _pod("db", "db", "c", ns="other")
        + _pod("new", "web", affinity=_required(AFF, _term("db", namespaces=["other"]))),
        ["c"],
    ),
    (
        "a pod in another namespace does not match by default",
        _pod("db", "db", "c", ns="other") + _pod("new", "web", affinity=_required(AFF, _term("db"))),
        [],
    ),
    (
        "affinity and anti-affinity together",
        _pod("db", "db", "a")
        + _pod("web", "web", "b")
        + _pod("new", "web", affinity=_required(AFF, _term("db")) | _required(ANTI, _term("web", HOST))),
        ["a"],
    ),
    (
        "an existing pod's anti-affinity towards the newcomer",
        _pod("db", "db", "a", affinity=_required(ANTI, _term("web")))
        + _pod("new", "web", affinity=_required(AFF, _term("web"))),
        ["c"],
    ),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_required_pod_affinity_filter(text: str, want: list[str]) -> None:
    assert _passing(text) == want


SCORE_CASES = [
    # (name, pods, score of every node for "new" with podaffinity.weight 1)
    (
        "preferred affinity: the matching pod's zone",
        _pod("db", "db", "c") + _pod("new", "web", affinity=_preferred(AFF, (10, _term("db")))),
        {"a": 0, "b": 0, "c": 100, "d": 0},
    ),
    (
        "preferred anti-affinity: everywhere but the pod's zone",
        _pod("db", "db", "a") + _pod("new", "web", affinity=_preferred(ANTI, (10, _term("db")))),
        {"a": 0, "b": 0, "c": 100, "d": 100},
    ),
    (
        "weights add per domain and normalise max-min",
        _pod("db", "db", "a")
        + _pod("cache", "cache", "c")
        + _pod("new", "web", affinity=_preferred(AFF, (30, _term("db")), (10, _term("cache", HOST)))),
        {"a": 100, "b": 100, "c": 33, "d": 0},
    ),
    (
        "affinity and anti-affinity: a negative domain is the floor",
        _pod("db", "db", "a")
        + _pod("web", "web", "c")
        + _pod("new", "web", affinity=_preferred(AFF, (20, _term("db"))) | _preferred(ANTI, (50, _term("web")))),
        {"a": 100, "b": 100, "c": 0, "d": 71},
    ),
    (
        "symmetry: an existing pod's preferred affinity selecting the newcomer",
        _pod("db", "db", "b", affinity=_preferred(AFF, (5, _term("web", HOST)))) + _pod("new", "web"),
        {"a": 0, "b": 100, "c": 0, "d": 0},
    ),
    (
        "symmetry: an existing pod's preferred anti-affinity",
        _pod("db", "db", "c", affinity=_preferred(ANTI, (5, _term("web")))) + _pod("new", "web"),
        {"a": 100, "b": 100, "c": 0, "d": 100},
    ),
    (
        "an existing pod's required affinity weighs nothing (Volcano's empty plugin args)",
        _pod("db", "db", "c", affinity=_required(AFF, _term("web")))
        + _pod("x", "x", affinity=_preferred(AFF, (1, _term("none"))))
        + _pod("new", "web"),
        {"a": 0, "b": 0, "c": 0, "d": 0},
    ),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES])
def test_preferred_pod_affinity_score(text: str, want: dict[str, float]) -> None:
    assert _scores(text) == want


def test_pods_placed_earlier_in_the_session_count() -> None:
    # Two pods of one gang prefer each other's host: the second follows the first.
    term = _preferred(AFF, (100, _term("web", HOST)))
    text = "".join(_node(n, z) for n, z in NODES.items())
    text += _doc(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minMember": 2},
            "status": {"phase": "Inqueue"},
        }
    )
    for i in range(2):
        text += _doc(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"web-{i}",
                    "namespace": "default",
                    "labels": {"app": "web"},
                    "annotations": {"scheduling.k8s.io/group-name": "web"},
                },
                "spec": {
                    "affinity": term,
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                },
            }
        )
    conf = parse_config(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder, arguments: {podaffinity.weight: 10}}]\n"
    )
    binds = run_cycle(snapshot_from_manifests(load_manifests(text)), conf).binds
    assert len(binds) == 2
    assert len(set(binds.values())) == 1


def test_required_affinity_failure_is_reported_and_unresolvable() -> None:
    text = "".join(_node(n, z) for n, z in NODES.items())
    text += _pod("new", "web", affinity=_required(AFF, _term("db")))
    result = run_cycle(snapshot_from_manifests(load_manifests(text)), FILTER)
    assert result.binds == {}
    assert "node(s) didn't match pod affinity rules" in result.unschedulable["default/new"].message
    session, task = _session(_pod("new", "web", affinity=_required(AFF, _term("db"))), FILTER)
    assert not session.predicate_mask(task, unresolvable_only=True).any()


def test_manifests_convert_every_kind_of_term() -> None:
    affinity = _required(AFF, _term("db")) | {
        ANTI: {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("web", HOST)],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": _term("x")}],
        }
    }
    affinity[AFF]["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {
            "weight": 3,
            "podAffinityTerm": {
                "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                "topologyKey": "zone",
                "namespaces": ["other"],
            },
        }
    ]
    snap = snapshot_from_manifests(load_manifests(_pod("new", "web", affinity=affinity)))
    task = next(t for t in snap.tasks if t.name == "new")
    assert [(t.topology_key, t.match_labels) for t in task.pod_affinity] == [("zone", (("app", "db"),))]
    assert [(t.topology_key, t.match_labels) for t in task.anti_affinity] == [(HOST, (("app", "web"),))]
    (pref,) = task.preferred_pod_affinity
    assert pref.weight == 3
    assert pref.term.namespaces == ("other",)
    assert pref.term.match_expressions[0].values == ("a", "b")
    (anti,) = task.preferred_anti_affinity
    assert (anti.weight, anti.term.match_labels) == (7, (("app", "x"),))


@pytest.mark.parametrize(
    ("affinity", "field"),
    [
        (
            _preferred(AFF, (0, _term("db"))),
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        ),
        (
            _preferred(ANTI, (5, {"labelSelector": {}})),
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey",
        ),
        (
            _required(AFF, {"topologyKey": ""}),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        ),
    ],
)
def test_bad_terms_name_the_field(affinity: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        snapshot_from_manifests(load_manifests(_pod("new", "web", affinity=affinity)))
    assert err.value.field == field


def test_a_job_shaped_like_a_failed_one_is_still_tried() -> None:
    # Same requests, queue and sizes: allocate may skip a job shaped like one that just failed,
    # but the pods' affinity terms differ, so the second job finds its node.
    text = "".join(_node(n, z) for n, z in NODES.items())
    text += _pod("cache", "cache", "d")
    text += _pod("a-new", "web", affinity=_required(AFF, _term("db", HOST)))
    text += _pod("b-new", "web", affinity=_required(AFF, _term("cache", HOST)))
    result = run_cycle(snapshot_from_manifests(load_manifests(text)), FILTER)
    assert result.binds == {"default/b-new": "d"}
    assert "default/a-new" in result.unschedulable
