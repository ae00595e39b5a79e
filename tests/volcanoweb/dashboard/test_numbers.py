"""Numbers in the why-pending panel and the events are in the units people use and say what they are."""

from __future__ import annotations

from typing import Any

import pytest

from volcanoweb.dashboard.reasons import human_message, reason_facts

pytestmark = pytest.mark.django_db


def test_resource_vectors_in_messages_are_rewritten() -> None:
    text = "task ml/a-0 requests {'cpu': 8000, 'memory': 34359738368}, queue has allocated {'cpu': 0} of {'cpu': 4000}"
    assert human_message(text) == "task ml/a-0 requests 8 CPU, 32 GiB, queue has allocated 0 CPU of 4 CPU"
    assert human_message("no vectors here {x}") == "no vectors here {x}"


def test_every_amount_says_its_unit() -> None:
    """Ephemeral storage read "1,200 ephemeral-storage" in a queue's real capability: 1,200 of what?"""
    from volcanoweb.dashboard.reasons import vector_text

    assert vector_text({"cpu": 2000, "ephemeral-storage": 1200 * 1024**3}) == "2 CPU, 1,200 GiB ephemeral storage"


def test_overcommit_shows_the_comparison_that_decided_with_the_nodes_pages_figures(world: Any) -> None:
    """16 GPU on the nodes, none in use: 8 admitted + 12 requested = 20 > 19.2 admissible (16 x 1.2 - 0). The
    free figure is the Nodes page's (16), not the core's rounded idle x factor divided back (15.8)."""
    from volcanoweb.clusters.models import Node

    Node.objects.filter(name="node-0").update(
        allocatable={"cpu": 16000, "memory": 64 * 1024**3, "pods": 110, "nvidia.com/gpu": 16}
    )
    numbers = {
        "idle": {"cpu": 57_600, "memory": int(230.4 * 1024**3), "nvidia.com/gpu": 19},  # the core rounds 19.2
        "requested": {"nvidia.com/gpu": 12, "cpu": 6000},
        "inqueue": {"nvidia.com/gpu": 8, "cpu": 2000},
    }
    facts = dict(reason_facts(numbers, "overcommit"))
    assert facts["Free in cluster (as on the Nodes page)"] == "48 CPU, 192 GiB, 16 GPU"
    assert facts["Decided on GPU"] == (
        "8 admitted (inqueue) + 12 requested = 20 GPU > 19.2 GPU admissible "
        "(16 in the cluster \u00d7 overcommit factor 1.2 \u2212 0 in use)"
    )
    assert facts["Decided on CPU"].endswith(
        "= 8 CPU \u2264 57.6 CPU admissible (48 in the cluster \u00d7 overcommit factor 1.2 \u2212 0 in use)"
    )
    assert not any("15.8" in v for v in facts.values())
    assert "Idle in cluster" not in facts


def test_a_queue_quota_refusal_shows_its_sum(cast: Any) -> None:
    numbers = {
        "requested": {"nvidia.com/gpu": 16},
        "queue_allocated": {"nvidia.com/gpu": 0},
        "inqueue": {},
        "elastic": {},
        "capability": {"nvidia.com/gpu": 12},
    }
    facts = dict(reason_facts(numbers, "proportion"))
    assert facts["Decided on GPU"] == (
        "16 requested + 0 allocated + 0 admitted \u2212 0 elastic = 16 GPU > 12 GPU the queue may use"
    )
    assert facts["Queue may use (its real capability)"] == "12 GPU"


def test_event_messages_use_human_units(world: Any, login: Any) -> None:
    from volcanoweb.jobs.models import Event

    Event.objects.create(
        namespace="team-a",
        tenant=world.job_a.tenant,
        involved_kind="Job",
        involved_namespace="team-a",
        involved_name="train-a",
        type="Warning",
        reason="Unschedulable",
        message="task team-a/train-a-0 requests {'cpu': 8000, 'memory': 34359738368}",
    )
    html = login(world.cast.alice).get("/jobs/team-a/train-a/?fragment=events").content.decode()
    assert "requests 8 CPU, 32 GiB" in html
    assert "34359738368" not in html


def _run(job: Any, node: str, cpu: int, gpu: int = 0) -> None:
    from volcanoweb.jobs.models import Pod

    requests = {"cpu": cpu, "memory": 1024**3, **({"nvidia.com/gpu": gpu} if gpu else {})}
    Pod.objects.create(
        name=f"{job.name}-0",
        namespace=job.namespace,
        tenant=job.tenant,
        job=job,
        phase="Running",
        node_name=node,
        requests=requests,
    )


def test_why_pending_names_the_jobs_ahead_and_counts_other_tenants(world: Any, login: Any) -> None:
    """The jobs ahead in the queue are named when the viewer may read them; another tenant's are only counted."""
    from tests.volcanoweb import builders

    builders.make_queue("shared-q")  # a platform queue, open to every tenant
    builders.make_job("team-b", "b-first", queue="shared-q")
    builders.make_job("team-a", "a-second", queue="shared-q")
    builders.make_job("team-a", "a-third", queue="shared-q")
    html = login(world.cast.alice).get("/jobs/team-a/a-third/?fragment=status").content.decode()
    assert "2 older pending jobs in queue shared-q" in html
    assert "team-a/a-second" in html
    assert "1 job of other tenants" in html
    assert "b-first" not in html  # never named to another tenant


def test_why_pending_names_the_jobs_holding_the_queues_resources(world: Any, login: Any) -> None:
    """When the queue's capability stops a job, the running jobs of that queue holding the most are named."""
    from tests.volcanoweb import builders
    from volcanoweb.jobs.models import PodGroup

    holder = builders.make_job("team-a", "big-holder", queue="team-a-q")
    small = builders.make_job("team-a", "small-holder", queue="team-a-q")
    _run(holder, "node-1", 24_000)
    _run(small, "node-2", 6_000)
    waiting = builders.make_job("team-a", "waits", queue="team-a-q", tasks=[builders.task(replicas=2, cpu="4")])
    group = PodGroup.objects.filter(job=waiting).first()
    if group is not None:
        status = {
            **(group.status or {}),
            "unschedulableReason": {"kind": "capability-exceeded", "message": "queue team-a-q is at its capability"},
        }
        PodGroup.objects.filter(pk=group.pk).update(status=status)
    html = login(world.cast.alice).get("/jobs/team-a/waits/?fragment=status").content.decode()
    assert "CPU in queue team-a-q is held by" in html
    assert html.index("team-a/big-holder (24 CPU)") < html.index("team-a/small-holder (6 CPU)")


def test_why_pending_says_when_no_single_node_can_ever_fit_a_pod(world: Any, login: Any) -> None:
    """An 8-GPU pod on nodes of at most 4 GPUs can never run, whatever the cluster holds in total."""
    from tests.volcanoweb import builders
    from volcanoweb.clusters.models import Node

    Node.objects.filter(name="node-1").update(
        allocatable={"cpu": 16000, "memory": 64 * 1024**3, "pods": 110, "nvidia.com/gpu": 4}
    )  # 8 GPUs in the cluster, 4 per node
    gpu_task = builders.task(name="trainer", replicas=1, cpu="2")
    gpu_task["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8"
    gpu_task["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "8"}
    builders.make_job("team-a", "eight-gpu", queue="team-a-q", tasks=[gpu_task])
    html = login(world.cast.alice).get("/jobs/team-a/eight-gpu/?fragment=status").content.decode()
    assert "No single node can ever run a pod of task trainer" in html
    assert "8 GPU (the largest node has 4)" in html
    fits = builders.task(name="small", replicas=1, cpu="2")
    builders.make_job("team-a", "fits", queue="team-a-q", tasks=[fits])
    assert "No single node" not in login(world.cast.alice).get("/jobs/team-a/fits/?fragment=status").content.decode()


def test_a_childs_capability_is_shown_bounded_by_its_ancestors(world: Any, login: Any) -> None:
    """A child queue without its own capability can never use more than its ancestor's (admission refuses a
    larger one): the tree shows the ancestor's figure and names it, for children and grandchildren alike."""
    from tests.volcanoweb import builders

    builders.make_queue("eng", tenant="team-a", capability={"cpu": "32"})
    builders.make_queue("eng-free", tenant="team-a", parent="eng")
    builders.make_queue("eng-small", tenant="team-a", parent="eng", capability={"cpu": "8"})
    builders.make_queue("eng-deep", tenant="team-a", parent="eng-free")
    html = login(world.cast.alice).get("/queues/").content.decode()

    def cap(queue: str) -> str:
        """The row's CPU capability text: the figure, then "(from X)" when an ancestor bounds it."""
        row = html[html.index(f'id="q-{queue}"') :]
        row = row[: row.index("</tr>")]
        cell = row[row.index('data-cap="cpu"') :]
        figure = cell[cell.index(">") + 1 : cell.index("</span>")]
        source = (
            cell[cell.index('data-cap-from="cpu">') :].split(">")[1].split("<")[0]
            if 'data-cap-from="cpu"' in cell
            else ""
        )
        return f"{figure}<{source}"

    assert cap("eng").startswith("32<")
    assert "(from" not in cap("eng")
    assert cap("eng-free").startswith("32<")
    assert "(from eng)" in cap("eng-free")
    assert "(from eng)" in cap("eng-deep")  # the nearest bounding ancestor, two levels up
    assert cap("eng-small").startswith("8<")
    assert "(from" not in cap("eng-small")


def test_a_nodes_pods_list_shows_the_viewers_pods_and_counts_the_others(world: Any, login: Any) -> None:
    _run(world.job_a, "node-1", 4_000, gpu=0)
    _run(world.job_b, "node-1", 2_000)
    mine = login(world.cast.alice).get("/nodes/node-1/pods/").content.decode()
    assert 'data-node-pod="team-a/train-a-0"' in mine
    assert "4 cores" in mine
    assert "secret-b" not in mine
    assert "and 1 pod of other tenants" in mine
    everything = login(world.cast.root).get("/nodes/node-1/pods/").content.decode()
    assert 'data-node-pod="team-b/secret-b-0"' in everything
    assert "other tenants" not in everything
    assert "No pods run on node-2" in login(world.cast.alice).get("/nodes/node-2/pods/").content.decode()
    grid = login(world.cast.alice).get("/nodes/").content.decode()
    assert 'aria-label="Pods on node-1"' in grid
    assert 'aria-label="Pods on node-2"' not in grid  # no pods there: nothing to open


def _gpu_job(builders: Any, name: str, per_pod: int, pods: int = 1, namespace: str = "team-a") -> Any:
    task = builders.task(name="trainer", replicas=pods, cpu="2")
    task["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(per_pod)
    task["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": str(per_pod)}
    return builders.make_job(namespace, name, queue="team-a-q", tasks=[task])


def test_why_pending_names_an_admitted_job_that_can_never_run_as_the_blocker(world: Any, login: Any) -> None:
    """A job refused admission by overcommit, while an Inqueue job whose pods fit no node holds the room: that job
    is named first, as the blocker, with what it holds and why it can never run."""
    from tests.volcanoweb import builders
    from volcanoweb.clusters.models import Node
    from volcanoweb.jobs.models import PodGroup

    Node.objects.filter(name="node-1").update(
        allocatable={"cpu": 16000, "memory": 64 * 1024**3, "pods": 110, "nvidia.com/gpu": 4}
    )
    blocker = _gpu_job(builders, "blocker", 8)
    PodGroup.objects.filter(job=blocker).update(phase="Inqueue", min_resources={"cpu": "2", "nvidia.com/gpu": "8"})
    waiting = _gpu_job(builders, "waits", 4)
    reason = {
        "kind": "enqueue-rejected",
        "plugin": "overcommit",
        "message": "resource in cluster is overused: insufficient nvidia.com/gpu",
        "numbers": {"requested": {"nvidia.com/gpu": 4}, "inqueue": {"nvidia.com/gpu": 8}},
    }
    PodGroup.objects.filter(job=waiting).update(status={"unschedulableReason": reason})
    html = login(world.cast.alice).get("/jobs/team-a/waits/?fragment=status").content.decode()
    title = "Blocked by team-a/blocker: it holds 2 CPU, 8 GPU of admission room and can never run"
    assert title in html
    assert html.index(title) < html.index("Not admitted: the queue or the cluster")
    assert "each pod of its task trainer asks 8 GPU (the largest node has 4)" in html
    assert "Fix its requests or delete it" in html
    # Once the blocker holds nothing (it runs, or is gone), nobody is blamed.
    PodGroup.objects.filter(job=blocker).update(phase="Pending")
    assert "Blocked by" not in login(world.cast.alice).get("/jobs/team-a/waits/?fragment=status").content.decode()


def test_a_job_the_gate_refused_is_not_counted_as_ahead(world: Any, login: Any) -> None:
    """A Pending job that can never run holds no admission room: it is named apart, not as a job ahead."""
    from tests.volcanoweb import builders
    from volcanoweb.jobs.models import PodGroup

    never = builders.make_job("team-a", "never", queue="team-a-q")
    builders.make_job("team-a", "older", queue="team-a-q")
    builders.make_job("team-a", "me", queue="team-a-q")
    PodGroup.objects.filter(job=never).update(
        status={"unschedulableReason": {"kind": "never-fits", "message": "pod group can never run"}}
    )
    html = login(world.cast.alice).get("/jobs/team-a/me/?fragment=status").content.decode()
    assert "2 older pending jobs in queue team-a-q" in html  # the world's train-a and older
    assert "Ahead: team-a/train-a, team-a/older." in html
    assert "Not counted: team-a/never (can never run, holds no admission room)." in html


def test_why_pending_says_when_other_queues_guarantees_leave_the_queue_too_little(world: Any, login: Any) -> None:
    """The demo's case: a parent queue guarantees 4 of the cluster's 16 GPUs, so under proportion its child can
    get at most 12 and a 16-GPU gang there is never admitted; the page says so, with the sum."""
    from tests.volcanoweb import builders
    from volcanoweb.clusters.models import Node
    from volcanoweb.jobs.models import PodGroup
    from volcanoweb.queues.models import Queue

    gpus = {"cpu": 16000, "memory": 64 * 1024**3, "pods": 110, "nvidia.com/gpu": 4}
    Node.objects.all().update(allocatable=gpus)
    for i in range(4 - Node.objects.count()):
        Node.objects.create(name=f"gpu-extra-{i}", allocatable=gpus, capacity=gpus, ready=True)
    Queue.objects.filter(name="team-b-q").update(guarantee={"nvidia.com/gpu": "4"})
    sixteen = _gpu_job(builders, "sixteen", 4, pods=4)
    refused = {"kind": "enqueue-rejected", "plugin": "proportion", "message": "queue resource quota insufficient"}
    PodGroup.objects.filter(job=sixteen).update(
        min_resources={"cpu": "8", "nvidia.com/gpu": "16"}, status={"unschedulableReason": refused}
    )
    html = login(world.cast.alice).get("/jobs/team-a/sixteen/?fragment=status").content.decode()
    assert "Needs more GPU than queue team-a-q can ever get" in html
    said = "team-a-q can get at most 12: the cluster&#x27;s 16 less what other queues&#x27; guarantees reserve"
    # team-b-q is team-b's: alice is told how much other tenants' queues reserve, not their names (the API and the
    # Submit page never confirm that another tenant's queue exists); a platform admin sees the name
    assert f"{said} (queues of other tenants 4)" in html
    assert "team-b-q" not in html
    assert "16 GPU needed &gt; 12 GPU the queue can ever get" in html  # the comparison, as a fact
    admin = login(world.cast.root).get("/jobs/team-a/sixteen/?fragment=status").content.decode()
    assert f"{said} (team-b-q 4)" in admin
    twelve = _gpu_job(builders, "twelve", 4, pods=3)
    PodGroup.objects.filter(job=twelve).update(
        min_resources={"cpu": "6", "nvidia.com/gpu": "12"}, status={"unschedulableReason": refused}
    )
    assert "can ever get" not in login(world.cast.alice).get("/jobs/team-a/twelve/?fragment=status").content.decode()
