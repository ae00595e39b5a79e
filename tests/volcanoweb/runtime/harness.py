"""A small world for controller tests: a SimCluster on a ManualClock, a stand-in scheduler and pod mirror.

The scheduler and the backend mirror belong to other parts of the project; here they are reduced to
what the controllers need: admitting a PodGroup (Inqueue), binding pods first-fit, and copying pod
phases from the simulator into ``jobs.Pod`` rows before calling ``services.on_pods_changed``.
"""

from __future__ import annotations

import copy
from typing import Any

from django.utils import timezone

from tests.volcanoweb import builders
from volcanoweb.clusters import backend as backend_module
from volcanoweb.clusters.backends.sim import ManualClock, SimCluster
from volcanoweb.clusters.backends.simrecords import integer_resources
from volcanoweb.jobs import services as job_services
from volcanoweb.jobs.models import Command, Job, Pod, PodGroup
from volcanoweb.runtime import services
from volcanoweb.tenancy.access import SYSTEM

NAMESPACE = "team-a"


class World:
    """The simulated cluster plus helpers that play the scheduler and the backend mirror."""

    def __init__(self, pools: str = "node:8x64c512Gi8gpu", default_duration: float = 60.0) -> None:
        self.clock = ManualClock()
        self.sim = SimCluster(pools, clock=self.clock, default_duration=default_duration)
        self.previous_backend = backend_module.set_backend(self.sim)

    # -------------------------------------------------------------- control plane

    def apply(self, doc: dict[str, Any]) -> Job:
        """Apply a Job manifest as the platform admin and tell the controller."""
        job_services.apply_job(SYSTEM, copy.deepcopy(doc), NAMESPACE)
        job = Job.objects.get(namespace=NAMESPACE, name=doc["metadata"]["name"])
        services.on_job_submitted(job.pk)
        return self.reload(job)

    def cookbook(self, filename: str, **annotations: str) -> Job:
        """Apply a cookbook job, optionally with extra job annotations (e.g. simulated durations)."""
        doc = builders.cookbook_documents(filename)[0]
        if annotations:
            doc["metadata"].setdefault("annotations", {}).update(annotations)
        return self.apply(doc)

    def command(self, job: Job, action: str) -> Command:
        """Issue a user command and run the controller."""
        command = job_services.issue_job_command(SYSTEM, job.namespace, job.name, action)
        services.sync_job(job.pk)
        return command

    @staticmethod
    def reload(job: Job) -> Job:
        """Return a fresh copy of the job row."""
        return Job.objects.get(pk=job.pk)

    # -------------------------------------------------------------- scheduler stand-in

    def admit(self, job: Job) -> None:
        """The enqueue action: move the job's PodGroup to Inqueue, and notify the controller."""
        PodGroup.objects.filter(job=job, phase="Pending").update(phase="Inqueue")
        services.on_podgroups_changed([job.pk])

    def bind(self, job: Job, names: list[str] | None = None) -> list[str]:
        """Bind the job's unbound pods first-fit (all of them, or the named ones); return bound names."""
        bound = []
        for pod in Pod.objects.filter(job=job, node_name="", deletion_timestamp__isnull=True).order_by("name"):
            if names is not None and pod.name not in names:
                continue
            node = self._fit(pod)
            self.sim.bind(pod.namespace, pod.name, node)
            bound.append(pod.name)
        PodGroup.objects.filter(job=job, phase="Inqueue").update(phase="Running")
        self.mirror()
        return bound

    def _fit(self, pod: Pod) -> str:
        """The first node with room for the pod's CPU (millicores, as the sim's node usage counts)."""
        info = self.sim.get_pod(pod.namespace, pod.name)
        cpu = integer_resources(info.requests, pod_slot=False).get("cpu", 0)
        pending = dict.fromkeys((n.name for n in self.sim.list_nodes()), 0)
        for other in self.sim.list_pods():
            if other.node_name and other.phase == "Pending":
                pending[other.node_name] += integer_resources(other.requests, pod_slot=False).get("cpu", 0)
        for node in self.sim.list_nodes():
            used = self.sim.node_usage(node.name)
            capacity = integer_resources(node.allocatable, pod_slot=False)["cpu"]
            if capacity - used.get("cpu", 0) - pending[node.name] >= cpu:
                return node.name
        raise AssertionError(f"no node fits {pod.name}")

    def schedule(self, job: Job) -> Job:
        """Admit, bind everything, start the pods; return the reloaded job."""
        self.admit(job)
        self.bind(job)
        return self.reload(job)

    # -------------------------------------------------------------- backend mirror stand-in

    def mirror(self) -> set[int]:
        """Copy pod changes from the simulator into Pod rows, then call ``on_pods_changed``."""
        job_ids: set[int] = set()
        for event in self.sim.poll_events():
            if event.kind != "pod":
                continue
            info = event.object
            pod = Pod.objects.filter(namespace=info.namespace, name=info.name).first()
            if pod is None or str(pod.uid) != info.uid:
                continue
            if pod.job_id is not None:
                job_ids.add(pod.job_id)
            if event.type == "DELETED":
                if pod.job_id is None:
                    pod.delete()
                    continue
                # as clusters.services does: a job pod's row stays, marked deleted, until the controller
                # has seen its last phase and treated it as gone
                pod.status = {**pod.status, "deleted": True}
                pod.deletion_timestamp = pod.deletion_timestamp or timezone.now()
                pod.save(update_fields=["status", "deletion_timestamp"])
                continue
            pod.phase, pod.node_name, pod.exit_code = info.phase, info.node_name, info.exit_code
            pod.status = {**pod.status, "reason": info.reason, "restartCount": info.restart_count}
            if info.deleting and pod.deletion_timestamp is None:
                pod.deletion_timestamp = timezone.now()
            pod.save()
        if job_ids:
            services.on_pods_changed(sorted(job_ids))
        return job_ids

    def advance(self, seconds: float) -> None:
        """Let simulated time pass and mirror what happened."""
        self.sim.advance(seconds)
        self.mirror()

    def fail(self, job: Job, pod_name: str, exit_code: int = 1) -> None:
        """Inject a failure (exit code) into a running pod."""
        self.sim.fail_pod(job.namespace, pod_name, exit_code)
        self.mirror()

    def crash(self, job: Job, pod_name: str, exit_code: int = 1) -> None:
        """The pod's container exits with ``exit_code``; its restartPolicy decides (restart in place or end)."""
        self.sim.restart_container(job.namespace, pod_name, exit_code)
        self.mirror()

    def evict(self, job: Job, pod_name: str) -> None:
        """Evict a pod through the Eviction API."""
        self.sim.evict(job.namespace, pod_name)
        self.mirror()

    def pods(self, job: Job) -> dict[str, Pod]:
        """Return the job's pod rows by name."""
        return {p.name: p for p in Pod.objects.filter(job=job)}

    def phases(self, job: Job) -> dict[str, str]:
        """Return pod name → phase."""
        return {name: pod.phase for name, pod in sorted(self.pods(job).items())}
