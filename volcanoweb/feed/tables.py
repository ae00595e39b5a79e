"""Which tables the log follows: a table, no logic (the kinds the APIs serve, plus nodes and the configuration)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tracked:
    """One followed table: the log's kind name, the model (``app_label.Model``) and its namespace/name columns."""

    kind: str
    model: str
    namespace: str = "namespace"
    name: str = "name"


TRACKED: tuple[Tracked, ...] = (
    Tracked("jobs", "jobs.Job"),
    Tracked("podgroups", "jobs.PodGroup"),
    Tracked("pods", "jobs.Pod"),
    Tracked("priorityclasses", "jobs.PriorityClass", namespace=""),
    Tracked("hypernodes", "jobs.HyperNode", namespace=""),
    Tracked("commands", "jobs.Command", namespace="target_namespace"),
    Tracked("events", "jobs.Event", name="involved_name"),
    Tracked("queues", "queues.Queue", namespace=""),
    Tracked("cronjobs", "workflows.CronJob"),
    Tracked("jobflows", "workflows.JobFlow"),
    Tracked("jobtemplates", "workflows.JobTemplate"),
    Tracked("namespaces", "tenancy.Namespace", namespace=""),
    Tracked("nodes", "clusters.Node", namespace=""),
    Tracked("schedulerconfigurations", "scheduling.SchedulerProfile", namespace="", name="version"),
)
BY_KIND = {t.kind: t for t in TRACKED}
#: The kinds every signed-in user may read (the REST and Kubernetes APIs list them unscoped): a watch, a list at
#: an old revision and a live socket show their changes to everyone.
EVERYONE = frozenset({"nodes", "priorityclasses", "schedulerconfigurations", "hypernodes"})
#: Columns whose change alone is no change of the object (none: every column is the object's).
IGNORED: tuple[str, ...] = ()
