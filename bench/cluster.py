"""Seeded cluster and object builders for the benchmark (docs/performance.md, "Workloads and sizes").

Objects are built directly from the scheduler's frozen model types with shared ``Resource``
values, which is ~10x faster than the ``scheduler.testing`` builders and gives identical objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler import Job, JobPhase, Node, Queue, Resource, Taint, Task, TaskStatus, Toleration

GIB = 1024**3
SIZES: dict[str, int] = {"S": 100, "M": 1_000, "L": 5_000, "XL": 10_000}
GPU_TAINT = Taint("dedicated", "gpu", "NoSchedule")
GPU_TOLERATION = Toleration("dedicated", "Exists", "", "NoSchedule")
NODE_CPU = 32
NODE_MEM_GIB = 256
NODE_PODS = 110


def size_nodes(size: str) -> int:
    """Return the node count of a size name (S, M, L, XL)."""
    try:
        return SIZES[size]
    except KeyError:
        raise SystemExit(f"unknown size {size!r}; known: {', '.join(SIZES)}") from None


def res(cpu: float, mem_gib: float, pods: int = 1, gpu: int = 0) -> Resource:
    """Return a Resource of ``cpu`` cores and ``mem_gib`` GiB (scheduler units)."""
    scalars = {"nvidia.com/gpu": gpu} if gpu else {}
    return Resource.from_dict({"cpu": round(cpu * 1000), "memory": round(mem_gib * GIB), "pods": pods, **scalars})


def make_nodes(n: int) -> list[Node]:
    """Node shape: 32 CPU / 256 GiB / 110 pods; every 4th node has 8 GPUs and a
    ``dedicated=gpu:NoSchedule`` taint; labels zone (3) and rack (25 nodes per rack)."""
    plain = res(NODE_CPU, NODE_MEM_GIB, NODE_PODS)
    gpu = res(NODE_CPU, NODE_MEM_GIB, NODE_PODS, gpu=8)
    out = []
    for i in range(n):
        is_gpu = i % 4 == 3
        out.append(
            Node(
                f"node-{i:05d}",
                gpu if is_gpu else plain,
                {"zone": f"zone-{i % 3}", "rack": f"rack-{i // 25:03d}"},
                (GPU_TAINT,) if is_gpu else (),
            )
        )
    return out


def plain_nodes(nodes: list[Node]) -> list[Node]:
    """Return the untainted (non-GPU) nodes."""
    return [n for n in nodes if not n.taints]


@dataclass
class Builder:
    """Accumulates PodGroups and pods for one snapshot."""

    jobs: list[Job]
    tasks: list[Task]

    def __init__(self) -> None:
        self.jobs = []
        self.tasks = []

    def job(
        self,
        name: str,
        replicas: int,
        req: Resource,
        queue: str = "default",
        min_member: int | None = None,
        priority: int | None = None,
        running_on: list[str] | None = None,
        phase: JobPhase = JobPhase.PENDING,
        creation: int = 0,
        selector: dict[str, str] | None = None,
        tolerate_gpu: bool = False,
        min_resources: bool = True,
    ) -> tuple[Job, list[Task]]:
        """Add a PodGroup ``name`` with ``replicas`` identical pods; the first ``len(running_on)``
        pods are Running on those nodes. ``min_resources`` sets minResources = min_member x req."""
        key = f"default/{name}"
        minimum = replicas if min_member is None else min_member
        if running_on and phase == JobPhase.PENDING:
            phase = JobPhase.RUNNING
        job = Job(
            uid=key,
            name=name,
            queue=queue,
            min_member=minimum,
            min_resources=req.scale(minimum) if min_resources else None,
            priority=priority,
            phase=phase,
            creation=creation,
        )
        tolerations = (GPU_TOLERATION,) if tolerate_gpu else ()
        sel = dict(selector) if selector else {}
        pods = []
        for i in range(replicas):
            on = running_on[i] if running_on and i < len(running_on) else ""
            pods.append(
                Task(
                    uid=f"default/{name}-{i}",
                    name=f"{name}-{i}",
                    job=key,
                    requests=req,
                    status=TaskStatus.RUNNING if on else TaskStatus.PENDING,
                    node_name=on,
                    priority=priority,
                    node_selector=sel,
                    tolerations=tolerations,
                    creation=creation,
                )
            )
        self.jobs.append(job)
        self.tasks.extend(pods)
        return job, pods


def default_queue() -> list[Queue]:
    """A single queue ``default`` of weight 1."""
    return [Queue("default", 1)]
