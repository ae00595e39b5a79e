"""The ORM → scheduler.Snapshot bridge."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from scheduler import JobPhase, QueueState, Resource, TaskStatus
from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import GiB, make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.jobs.models import Pod, PriorityClass
from volcanoweb.scheduling.models import IntentKind, PodIntent
from volcanoweb.scheduling.snapshots import build_snapshot


def scheduler_run(snapshot: Any, config: Any, cache: Any) -> dict[str, Any]:
    """Run the core on ``snapshot``; return its decisions (timings dropped, so results compare)."""
    import scheduler

    data: dict[str, Any] = scheduler.run_cycle(snapshot, config, cache=cache).to_json()
    data.pop("timings")
    return data


def test_snapshot_maps_rows(sim: Any, cast: Any) -> None:
    cluster_services.sync_from_backend()
    builders.make_queue("ml", capability={"cpu": "4", "memory": "8Gi"}, weight=3)
    PriorityClass.objects.create(name="high", value=1000)
    _group, pods = make_gang("train", 3, tenant=cast.team_a, queue="ml", min_member=2, min_resources={"cpu": "2"})
    Pod.objects.filter(pk=pods[1].pk).update(node_name="cpu-1", phase="Running")
    Pod.objects.filter(pk=pods[2].pk).update(node_name="cpu-2")
    PodIntent.objects.create(kind=IntentKind.BIND, namespace="team-a", name="train-2", node="cpu-2")
    Pod.objects.create(
        namespace="team-a",
        name="other",
        scheduler_name="default-scheduler",
        node_name="cpu-3",
        phase="Running",
        requests={"cpu": 500},
    )
    Pod.objects.create(
        namespace="team-a", name="unbound-other", scheduler_name="default-scheduler", requests={"cpu": 1}
    )

    info = build_snapshot()
    snap = info.snapshot

    assert sorted(n.name for n in snap.nodes) == ["cpu-0", "cpu-1", "cpu-2", "cpu-3"]
    node = next(n for n in snap.nodes if n.name == "cpu-0")
    assert node.allocatable == Resource(8000, 32 * GiB, 110, scalars={"ephemeral-storage": 100 * GiB})
    queues = {q.name: q for q in snap.queues}
    assert {"root", "default", "ml"} <= set(queues)
    assert queues["ml"].capability == Resource(4000, 8 * GiB)
    assert (queues["ml"].weight, queues["ml"].parent, queues["ml"].state) == (3, "root", QueueState.OPEN)
    assert queues["ml"].guarantee is None
    (job,) = snap.jobs
    assert (job.key, job.queue, job.min_member, job.phase) == ("team-a/train", "ml", 2, JobPhase.PENDING)
    assert job.min_resources == Resource(2000)
    tasks = {t.name: t for t in snap.tasks}
    assert set(tasks) == {"train-0", "train-1", "train-2", "other"}
    assert tasks["train-0"].status == TaskStatus.PENDING
    assert tasks["train-0"].job == "team-a/train"
    assert tasks["train-0"].requests == Resource(1000, GiB, 1)
    assert (tasks["train-1"].status, tasks["train-1"].node_name) == (TaskStatus.RUNNING, "cpu-1")
    assert tasks["train-2"].status == TaskStatus.BINDING  # recorded, not yet acknowledged
    assert tasks["other"].job == ""
    assert tasks["other"].status == TaskStatus.RUNNING
    assert [(p.name, p.value) for p in snap.priority_classes] == [("high", 1000)]
    assert info.pod_ids["team-a/train-0"] == pods[0].pk


def test_snapshot_pod_details(sim: Any, cast: Any) -> None:
    _, (pod,) = make_gang("sel", 1, tenant=cast.team_a)
    pod.spec = {
        **pod.spec,
        "nodeSelector": {"sim.volcanoweb.io/pool": "gpu"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
    }
    pod.annotations = {**pod.annotations, "volcano.sh/preemptable": "false", "volcano.sh/task-spec": "ps"}
    pod.save()
    Pod.objects.create(
        namespace="team-a",
        name="gone",
        group_name="sel",
        scheduler_name="volcano",
        status={"deleted": True},
        node_name="cpu-0",
    )
    Pod.objects.filter(pk=pod.pk).update()
    (task,) = build_snapshot().snapshot.tasks
    assert task.node_selector == {"sim.volcanoweb.io/pool": "gpu"}
    assert task.tolerations[0].operator == "Exists"
    assert task.required_affinity[0].match_expressions[0].values == ("a",)
    assert task.preemptable is False
    assert task.role == "ps"


def test_a_pods_limits_reach_the_scheduler(sim: Any, cast: Any) -> None:
    """usage's estimator reads a pod's limits: the containers' sum, a sidecar added, the largest init container."""
    _, (pod,) = make_gang("lim", 1, tenant=cast.team_a)
    pod.spec = {
        **pod.spec,
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m"}}},
        ],
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"memory": "1Gi"}}},
            {"name": "init", "resources": {"limits": {"cpu": "4"}}},
        ],
    }
    pod.save()
    (task,) = build_snapshot().snapshot.tasks
    assert task.limits == Resource(4000, 2 * GiB, 0)


def test_unchanged_rows_give_the_same_objects(sim: Any, cast: Any) -> None:
    from volcanoweb.scheduling.memo import Memo

    cluster_services.sync_from_backend()
    _group, pods = make_gang("memo", 3, tenant=cast.team_a)
    memo = Memo()
    first = build_snapshot(memo).snapshot
    again = build_snapshot(memo).snapshot
    for field in ("nodes", "queues", "jobs", "tasks", "priority_classes"):
        assert all(a is b for a, b in zip(getattr(first, field), getattr(again, field), strict=True)), field
    Pod.objects.filter(pk=pods[0].pk).update(node_name="cpu-1")
    changed = build_snapshot(memo).snapshot
    by_name = {t.name: t for t in again.tasks}
    assert [t.name for t in changed.tasks if t is not by_name[t.name]] == ["memo-0"]
    assert next(t for t in changed.tasks if t.name == "memo-0").node_name == "cpu-1"


def test_the_scheduling_loop_reuses_its_session_when_the_rows_did_not_change(sim: Any, cast: Any) -> None:
    from volcanoweb.scheduling import cycles

    cluster_services.sync_from_backend()
    make_gang("huge", 2, tenant=cast.team_a, cpu=64_000)  # fits nowhere: cycles change nothing
    hits = cycles._cache.hits
    runs = [cycles.run_cycle() for _ in range(3)]
    assert [run.status if run else None for run in runs] == ["succeeded"] * 3
    assert cycles._cache.hits >= hits + 1  # the cycles after the first reuse the opened session


def test_snapshot_reads_pod_affinity_anti_affinity_spread_labels_and_sla(sim: Any, cast: Any) -> None:
    group, (pod,) = make_gang("fid", 1, tenant=cast.team_a)
    pod.labels = {"app": "fid"}
    pod.spec = {
        **pod.spec,
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "fid"}}}
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 4,
                        "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}},
                    }
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}, "namespaces": ["data"]}
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 9,
                        "podAffinityTerm": {"topologyKey": "rack", "labelSelector": {"matchLabels": {"app": "y"}}},
                    }
                ],
            },
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 2,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            }
        ],
    }
    pod.save()
    group.annotations = {"sla-waiting-time": "1m30s"}
    group.save()
    group.refresh_from_db()

    snap = build_snapshot(now=1_800_000_000.5).snapshot

    (task,) = snap.tasks
    assert task.labels == {"app": "fid"}
    (term,) = task.anti_affinity
    assert (term.topology_key, term.match_labels, term.namespaces) == ("kubernetes.io/hostname", (("app", "fid"),), ())
    (needs,) = task.pod_affinity
    assert (needs.topology_key, needs.match_labels, needs.namespaces) == ("zone", (("app", "db"),), ("data",))
    assert [(w.weight, w.term.topology_key) for w in task.preferred_pod_affinity] == [(9, "rack")]
    assert [(w.weight, w.term.topology_key) for w in task.preferred_anti_affinity] == [(4, "zone")]
    (spread,) = task.topology_spread
    assert (spread.max_skew, spread.topology_key, spread.when_unsatisfiable) == (2, "zone", "ScheduleAnyway")
    assert spread.match_expressions[0].operator == "Exists"
    (job,) = snap.jobs
    assert job.sla_waiting_time == 90.0
    assert job.created_at == group.created_at.timestamp()
    assert snap.now == 1_800_000_000.5


def test_snapshot_clock_defaults_to_the_current_time(sim: Any, cast: Any) -> None:
    before = timezone.now().timestamp()
    now = build_snapshot().snapshot.now
    assert now is not None
    assert before <= now <= timezone.now().timestamp()


def test_a_bad_sla_annotation_or_placement_is_ignored_not_fatal(sim: Any, cast: Any) -> None:
    group, (pod,) = make_gang("bad", 1, tenant=cast.team_a)
    group.annotations = {"sla-waiting-time": "soon"}
    group.save()
    pod.spec = {**pod.spec, "topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone"}]}
    pod.save()
    snap = build_snapshot().snapshot
    assert snap.jobs[0].sla_waiting_time is None
    assert snap.tasks[0].topology_spread == ()


def test_a_moving_clock_keeps_the_memo_and_the_session_cache(sim: Any, cast: Any) -> None:
    from scheduler import SessionCache, parse_config
    from volcanoweb.scheduling.memo import Memo

    cluster_services.sync_from_backend()
    make_gang("huge", 2, tenant=cast.team_a, cpu=64_000)  # fits nowhere
    config = parse_config(
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: sla\n  - name: gang\n- plugins:\n  - name: drf\n"
    )
    memo, cache = Memo(), SessionCache()
    first = build_snapshot(memo, now=1000.0).snapshot
    scheduler_run(first, config, cache)
    later = build_snapshot(memo, now=2000.0).snapshot
    assert later.now == 2000.0
    for field in ("nodes", "queues", "jobs", "tasks", "priority_classes"):
        assert all(a is b for a, b in zip(getattr(first, field), getattr(later, field), strict=True)), field
    hits = cache.hits
    assert scheduler_run(later, config, cache) == scheduler_run(later, config, None)
    assert cache.hits == hits + 1


def test_hypernodes_and_network_topology_reach_the_scheduler(sim: Any, cast: Any) -> None:
    """HyperNode rows become the snapshot's HyperNodes and a PodGroup's spec.networkTopology its
    job's: racks a (cpu-0, cpu-1) and b (cpu-2, cpu-3) of 8-CPU nodes, cpu-1 half full; a 2-pod gang
    of 5 CPU each with a hard topology of tier 1 is placed on rack b (rack a has one node free,
    and without the topology it would take cpu-0 and another rack's node)."""
    import dataclasses

    import scheduler
    from volcanoweb.apply import apply_documents
    from volcanoweb.jobs.models import PodGroup
    from volcanoweb.tenancy.access import SYSTEM

    cluster_services.sync_from_backend()
    racks = [
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": f"rack-{r}"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]},
        }
        for r, nodes in (("a", ("cpu-0", "cpu-1")), ("b", ("cpu-2", "cpu-3")))
    ]
    apply_documents(SYSTEM, racks)
    Pod.objects.create(
        namespace="team-a",
        name="busy",
        scheduler_name="default-scheduler",
        node_name="cpu-1",
        phase="Running",
        requests={"cpu": 4000},
    )
    group, _ = make_gang("gang", 2, tenant=cast.team_a, cpu=5000, phase="Inqueue")
    spec = {**group.spec, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    PodGroup.objects.filter(pk=group.pk).update(spec=spec)
    snap = build_snapshot().snapshot
    assert sorted(h.name for h in snap.hyper_nodes) == ["rack-a", "rack-b"]
    [job] = [j for j in snap.jobs if j.name == "gang"]
    assert job.network_topology == scheduler.model.NetworkTopology("hard", 1)
    conf = scheduler.parse_config(
        "actions: allocate\ntiers:\n- plugins: [{name: gang}, {name: predicates}, {name: network-topology-aware}]\n"
    )
    binds = scheduler.run_cycle(snap, conf).binds
    assert sorted(binds.values()) == ["cpu-2", "cpu-3"]
    untied = [dataclasses.replace(j, network_topology=None) if j.name == "gang" else j for j in snap.jobs]
    flat = scheduler.run_cycle(dataclasses.replace(snap, jobs=tuple(untied)), conf).binds
    assert "cpu-0" in flat.values()
    assert sorted(flat.values()) != ["cpu-2", "cpu-3"]
