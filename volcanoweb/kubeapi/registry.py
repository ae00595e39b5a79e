"""The kinds the Kubernetes-shaped API serves: group, version, names, verbs, printer columns, queries and writers.

A table, no logic: every write goes to the owning app's service, every read is scoped through the
tenancy helpers. Names, short names and printer columns follow Volcano's CRDs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from volcanoweb.clusters.models import Node
from volcanoweb.jobs import services as jobs
from volcanoweb.jobs.models import Command, Event, HyperNode, Job, Pod, PodGroup, PriorityClass
from volcanoweb.kubeapi import pods
from volcanoweb.manifests import corenode, parse, render
from volcanoweb.manifests.parse import KindInfo
from volcanoweb.queues import services as queues
from volcanoweb.queues.models import Queue
from volcanoweb.tenancy.access import Access, visible_queue_filter
from volcanoweb.tenancy.models import Namespace
from volcanoweb.workflows import services as workflows
from volcanoweb.workflows.models import CronJob, JobFlow, JobTemplate

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class Column:
    """One printer column: a header, an OpenAPI type and a dotted path into the object (``.status.phase``)."""

    name: str
    type: str
    path: str
    priority: int = 0
    description: str = ""
    #: Computes the cell from the object when no single field holds it (a pod's ``1/1`` READY).
    value: Callable[[dict[str, Any]], Any] | None = None


@dataclass(frozen=True)
class KubeResource:
    """How one kind is named, listed, rendered and written through the Kubernetes-shaped API."""

    info: KindInfo
    singular: str
    model: type[Any]
    render: Callable[[Any], dict[str, Any]]
    base: Callable[[Access], QuerySet[Any]]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ()
    apply: Callable[..., Any] | None = None
    delete: Callable[..., Any] | None = None
    namespace_field: str = "namespace"
    order: tuple[str, ...] = ("name", "pk")
    labels: bool = True
    extra_verbs: tuple[str, ...] = field(default=())
    #: ``delete`` takes ``propagation=`` (Background, Foreground, Orphan): garbage collection of dependents.
    propagates: bool = False

    @property
    def group(self) -> str:
        """Return the API group ("" for the core group)."""
        return self.info.group

    @property
    def version(self) -> str:
        """Return the API version (``v1alpha1``)."""
        return self.info.api_version.rpartition("/")[2]

    @property
    def plural(self) -> str:
        """Return the plural resource name used in URLs."""
        return self.info.resource

    @property
    def writable(self) -> bool:
        """Return True when the kind accepts create/update/patch/delete."""
        return self.apply is not None

    @property
    def verbs(self) -> list[str]:
        """Return the verbs announced in discovery."""
        verbs = list(READ_VERBS)
        if self.writable:
            verbs += list(WRITE_VERBS)
        return sorted({*verbs, *self.extra_verbs})


def _scoped(model: type[Any]) -> Callable[[Access], QuerySet[Any]]:
    def base(access: Access) -> QuerySet[Any]:
        return access.scope(model.objects.all())

    return base


def _pending_commands(access: Access) -> QuerySet[Any]:
    """The Commands the controllers have not acted on: Volcano deletes a Command once it has acted on it."""
    pending: QuerySet[Any] = access.scope(jobs.pending_commands())
    return pending


#: PodGroup ``status`` counters as Volcano's scheduler fills them, from the group's pods (zero: absent).
PODGROUP_COUNTERS = {"running": "Running", "succeeded": "Succeeded", "failed": "Failed"}


def _podgroups(access: Access) -> QuerySet[Any]:
    counted: QuerySet[Any] = access.scope(PodGroup.objects.all()).annotate(
        **{f"pods_{key}": Count("pods", filter=Q(pods__phase=phase)) for key, phase in PODGROUP_COUNTERS.items()}
    )
    return counted


def podgroup_manifest(group: PodGroup) -> dict[str, Any]:
    """Return a PodGroup with ``status.running``, ``succeeded`` and ``failed`` (when the rows were counted)."""
    out = render.podgroup(group)
    for key in PODGROUP_COUNTERS:
        count = getattr(group, f"pods_{key}", None)
        if count:
            out["status"][key] = count
        elif count == 0:
            out["status"].pop(key, None)
    return out


def _queues(access: Access) -> QuerySet[Any]:
    return Queue.objects.filter(visible_queue_filter(access)).distinct().select_related("parent")


def _everyone(model: type[Any]) -> Callable[[Access], QuerySet[Any]]:
    def base(access: Access) -> QuerySet[Any]:
        everything: QuerySet[Any] = model.objects.all()
        return everything

    return base


def _namespaces(access: Access) -> QuerySet[Any]:
    queryset = Namespace.objects.select_related("tenant")
    if access.platform_admin:
        return queryset
    return queryset.filter(tenant_id__in=access.readable_tenant_ids())


def namespace_manifest(ns: Namespace) -> dict[str, Any]:
    """Return a core ``v1`` Namespace (every namespace is Active; the tenant is an annotation)."""
    annotations = dict(ns.annotations or {})
    if ns.tenant is not None:
        annotations["volcanoweb.io/tenant"] = ns.tenant.name
    meta: dict[str, Any] = {"name": ns.name, "uid": f"namespace-{ns.pk}", "resourceVersion": str(ns.resource_version)}
    if ns.labels:
        meta["labels"] = dict(ns.labels)
    if annotations:
        meta["annotations"] = annotations
    created = getattr(ns, "created_at", None)
    if created is not None:
        meta["creationTimestamp"] = render.timestamp(created)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "spec": {}, "status": {"phase": "Active"}}


#: The apiVersion of an event's involved object, by kind (``kubectl events --for`` selects on it).
INVOLVED_API_VERSIONS = {
    info.kind: info.api_version
    for info in (parse.JOB, parse.CRONJOB, parse.PODGROUP, parse.QUEUE, parse.JOBFLOW, parse.JOBTEMPLATE, parse.POD)
}


def event_manifest(event: Event) -> dict[str, Any]:
    """Return a core ``v1`` Event."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{event.involved_name}.{event.pk:x}",
            "namespace": event.namespace,
            "uid": f"event-{event.pk}",
            "resourceVersion": str(event.resource_version),
            "creationTimestamp": render.timestamp(event.first_timestamp),
        },
        "involvedObject": {
            "apiVersion": INVOLVED_API_VERSIONS.get(event.involved_kind, "v1"),
            "kind": event.involved_kind,
            "namespace": event.involved_namespace,
            "name": event.involved_name,
            "uid": str(event.involved_uid or ""),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "count": event.count,
        "firstTimestamp": render.timestamp(event.first_timestamp),
        "lastTimestamp": render.timestamp(event.last_timestamp),
        "source": {"component": event.source},
    }


def command_manifest(command: Command) -> dict[str, Any]:
    """Return a ``bus.volcano.sh/v1alpha1`` Command with the metadata kubectl expects."""
    out = jobs.command_manifest(command)
    out["metadata"] = {**out["metadata"], "resourceVersion": str(command.resource_version)}
    if command.job_id is not None:
        out["metadata"]["ownerReferences"] = [
            {
                "apiVersion": parse.JOB.api_version,
                "kind": "Job",
                "name": command.target_name,
                "uid": str(command.target_uid or ""),
                "controller": True,
            }
        ]
    return out


def _delete_workflow(kind: str) -> Callable[..., Any]:
    def delete(access: Access, namespace: str, name: str, propagation: str = "Background") -> Any:
        return workflows.delete_workflow_object(access, kind, namespace, name, propagation)

    return delete


def _cluster_scoped_apply(apply: Callable[..., Any]) -> Callable[..., Any]:
    def call(access: Access, doc: dict[str, Any], namespace: str | None, *, mode: str) -> Any:
        return apply(access, doc, mode=mode)

    return call


def _delete_cluster_scoped(delete: Callable[..., Any]) -> Callable[..., Any]:
    def call(access: Access, namespace: str | None, name: str) -> Any:
        return delete(access, name)

    return call


COMMAND = KindInfo("bus.volcano.sh/v1alpha1", "Command", "commands", True)
NAMESPACE = KindInfo("v1", "Namespace", "namespaces", False)
NODE = KindInfo("v1", "Node", "nodes", False)
SERVICE = KindInfo("v1", "Service", "services", True)


def _no_services(access: Access) -> QuerySet[Any]:
    """Services are not served (the svc plugin's live in the cluster backend): an empty, read-only list, so that
    ``kubectl cluster-info`` (which lists kube-system's cluster services) prints the control plane's URL."""
    none: QuerySet[Any] = Namespace.objects.none()
    return none


def _service_manifest(obj: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": obj.name}}


EVENT = KindInfo("v1", "Event", "events", True)

AGE = Column("Age", "date", ".metadata.creationTimestamp")


def _info(key: str) -> Callable[[dict[str, Any]], str]:
    return functools.partial(corenode.node_info, key)


RESOURCES: tuple[KubeResource, ...] = (
    KubeResource(
        parse.JOB,
        "job",
        Job,
        render.job,
        _scoped(Job),
        short_names=("vcjob", "vj"),
        categories=("volcano", "all"),
        columns=(
            Column("Status", "string", ".status.state.phase"),
            Column("minAvailable", "integer", ".status.minAvailable"),
            Column("Runnings", "integer", ".status.running"),
            AGE,
            Column("Queue", "string", ".spec.queue", priority=1),
        ),
        apply=jobs.apply_job,
        delete=jobs.delete_job,
        propagates=True,
    ),
    KubeResource(
        parse.CRONJOB,
        "cronjob",
        CronJob,
        render.cronjob,
        _scoped(CronJob),
        short_names=("cronvcjob", "cronvj"),
        categories=("volcano",),
        columns=(
            Column("Schedule", "string", ".spec.schedule"),
            Column("Suspend", "boolean", ".spec.suspend"),
            Column("Last Schedule", "date", ".status.lastScheduleTime"),
            AGE,
        ),
        apply=workflows.apply_cronjob,
        delete=_delete_workflow("CronJob"),
        propagates=True,
    ),
    KubeResource(
        parse.QUEUE,
        "queue",
        Queue,
        render.queue,
        _queues,
        short_names=("q", "queue-v1beta1"),
        categories=("volcano",),
        columns=(Column("Parent", "string", ".spec.parent"), Column("State", "string", ".status.state"), AGE),
        apply=_cluster_scoped_apply(queues.apply_queue),
        delete=_delete_cluster_scoped(queues.delete_queue),
    ),
    KubeResource(
        parse.PODGROUP,
        "podgroup",
        PodGroup,
        podgroup_manifest,
        _podgroups,
        short_names=("pg", "podgroup-v1beta1"),
        categories=("volcano",),
        columns=(
            Column("Status", "string", ".status.phase"),
            Column("minMember", "integer", ".spec.minMember"),
            Column("Runnings", "integer", ".status.running"),
            AGE,
            Column("Queue", "string", ".spec.queue", priority=1),
        ),
        apply=jobs.apply_podgroup,
        delete=jobs.delete_podgroup,
    ),
    KubeResource(
        parse.JOBFLOW,
        "jobflow",
        JobFlow,
        render.jobflow,
        _scoped(JobFlow),
        short_names=("jf",),
        categories=("volcano",),
        columns=(Column("Status", "string", ".status.state.phase"), AGE),
        apply=workflows.apply_jobflow,
        delete=_delete_workflow("JobFlow"),
        propagates=True,
    ),
    KubeResource(
        parse.JOBTEMPLATE,
        "jobtemplate",
        JobTemplate,
        render.jobtemplate,
        _scoped(JobTemplate),
        short_names=("jt",),
        categories=("volcano",),
        columns=(AGE,),
        apply=workflows.apply_jobtemplate,
        delete=_delete_workflow("JobTemplate"),
        propagates=True,
    ),
    KubeResource(
        COMMAND,
        "command",
        Command,
        command_manifest,
        _pending_commands,
        categories=("volcano",),
        columns=(
            Column("Action", "string", ".action"),
            Column("Target", "string", ".target.name"),
            Column("Consumed", "boolean", ".status.consumed"),
            AGE,
        ),
        delete=jobs.delete_command,
        namespace_field="target_namespace",
        order=("created_at", "pk"),
        labels=False,
        extra_verbs=("create", "delete", "deletecollection"),
    ),
    KubeResource(
        parse.PRIORITYCLASS,
        "priorityclass",
        PriorityClass,
        render.priorityclass,
        _everyone(PriorityClass),
        short_names=("pc",),
        columns=(
            Column("Value", "integer", ".value"),
            Column("Global-Default", "boolean", ".globalDefault"),
            AGE,
        ),
        apply=_cluster_scoped_apply(jobs.apply_priorityclass),
        delete=_delete_cluster_scoped(jobs.delete_priorityclass),
    ),
    KubeResource(
        parse.HYPERNODE,
        "hypernode",
        HyperNode,
        render.hypernode,
        _everyone(HyperNode),
        short_names=("hn",),
        columns=(
            Column("Tier", "string", ".spec.tier"),
            Column("TierName", "string", ".spec.tierName"),
            AGE,
        ),
        order=("tier", "name", "pk"),
        apply=_cluster_scoped_apply(jobs.apply_hypernode),
        delete=_delete_cluster_scoped(jobs.delete_hypernode),
    ),
    KubeResource(
        parse.POD,
        "pod",
        Pod,
        render.pod,
        _scoped(Pod),
        short_names=("po",),
        categories=("all",),
        columns=(
            Column("Ready", "string", ".status.containerStatuses", value=pods.ready),
            Column("Status", "string", ".status.phase", value=pods.status_text),
            Column("Restarts", "integer", ".status.containerStatuses", value=pods.restarts),
            AGE,
            Column("IP", "string", ".status.podIP", priority=1, value=pods.ip),
            Column("Node", "string", ".spec.nodeName", priority=1, value=pods.node),
            Column("Nominated Node", "string", ".status.nominatedNodeName", priority=1, value=pods.nominated),
            Column("Readiness Gates", "string", ".spec.readinessGates", priority=1, value=pods.readiness_gates),
        ),
        apply=jobs.apply_pod,
        delete=jobs.delete_pod,
    ),
    KubeResource(
        EVENT,
        "event",
        Event,
        event_manifest,
        _scoped(Event),
        short_names=("ev",),
        columns=(
            Column("Last Seen", "date", ".lastTimestamp"),
            Column("Type", "string", ".type"),
            Column("Reason", "string", ".reason"),
            Column("Object", "string", ".involvedObject.name"),
            Column("Message", "string", ".message"),
        ),
        order=("last_timestamp", "pk"),
        labels=False,
    ),
    KubeResource(
        NODE,
        "node",
        Node,
        corenode.node_manifest,
        _everyone(Node),
        short_names=("no",),
        columns=(
            Column("Status", "string", ".status.conditions", value=corenode.status_text),
            Column("Roles", "string", ".metadata.labels", value=corenode.roles),
            AGE,
            Column("Version", "string", ".status.nodeInfo.kubeletVersion"),
            Column("Internal-IP", "string", ".status.addresses", priority=1, value=corenode.internal_ip),
            Column("External-IP", "string", ".status.addresses", priority=1, value=corenode.external_ip),
            Column("OS-Image", "string", ".status.nodeInfo.osImage", priority=1, value=_info("osImage")),
            Column("Kernel-Version", "string", ".status.nodeInfo", priority=1, value=_info("kernelVersion")),
            Column(
                "Container-Runtime", "string", ".status.nodeInfo", priority=1, value=_info("containerRuntimeVersion")
            ),
        ),
    ),
    KubeResource(
        SERVICE,
        "service",
        Namespace,
        _service_manifest,
        _no_services,
        short_names=("svc",),
        columns=(Column("Type", "string", ".spec.type"), Column("Cluster-IP", "string", ".spec.clusterIP"), AGE),
        labels=False,
    ),
    KubeResource(
        NAMESPACE,
        "namespace",
        Namespace,
        namespace_manifest,
        _namespaces,
        short_names=("ns",),
        columns=(Column("Status", "string", ".status.phase"), AGE),
    ),
)

#: (group, version) -> plural -> resource
BY_GROUP_VERSION: dict[tuple[str, str], dict[str, KubeResource]] = {}
for _resource in RESOURCES:
    BY_GROUP_VERSION.setdefault((_resource.group, _resource.version), {})[_resource.plural] = _resource
