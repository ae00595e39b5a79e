"""The writes for jobs, PodGroups, pods, PriorityClasses, HyperNodes, ResourceQuotas, commands and events:
the only writers of these models (ADR 0015). One module per kind; :mod:`.common` holds what they share.

This package is the app's public face (``from volcanoweb.jobs import services`` then
``services.apply_job(...)``); it re-exports each kind's public API.
"""

from volcanoweb.jobs.services.commands import (
    COMMAND_ALIASES,
    COMMAND_INFO,
    JOB_COMMANDS,
    bad_command_body,
    command_manifest,
    command_name,
    consume_command,
    delete_command,
    issue_job_command,
    normalise_command_action,
    pending_commands,
)
from volcanoweb.jobs.services.events import record_event
from volcanoweb.jobs.services.hypernodes import (
    DISCOVERY_SOURCE,
    DISCOVERY_TIERS,
    apply_hypernode,
    delete_hypernode,
    discover_hypernodes,
)
from volcanoweb.jobs.services.jobs import (
    BACKGROUND,
    FINISHED_JOB_PHASES,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    PROPAGATION_POLICIES,
    RUN_OF_ANNOTATION,
    apply_job,
    apply_jobs,
    collect_garbage,
    delete_job,
    dependents,
    initial_job_status,
    next_run_name,
    run_again,
)
from volcanoweb.jobs.services.podgroups import apply_podgroup, delete_podgroup
from volcanoweb.jobs.services.pods import apply_pod, delete_pod
from volcanoweb.jobs.services.priorityclasses import apply_priorityclass, delete_priorityclass
from volcanoweb.jobs.services.resourcequotas import apply_resourcequota, check_resourcequota_spec, delete_resourcequota

__all__ = [
    "BACKGROUND",
    "COMMAND_ALIASES",
    "COMMAND_INFO",
    "DISCOVERY_SOURCE",
    "DISCOVERY_TIERS",
    "FINISHED_JOB_PHASES",
    "FOREGROUND",
    "FOREGROUND_FINALIZER",
    "JOB_COMMANDS",
    "ORPHAN",
    "PROPAGATION_POLICIES",
    "RUN_OF_ANNOTATION",
    "apply_hypernode",
    "apply_job",
    "apply_jobs",
    "apply_pod",
    "apply_podgroup",
    "apply_priorityclass",
    "apply_resourcequota",
    "bad_command_body",
    "check_resourcequota_spec",
    "collect_garbage",
    "command_manifest",
    "command_name",
    "consume_command",
    "delete_command",
    "delete_hypernode",
    "delete_job",
    "delete_pod",
    "delete_podgroup",
    "delete_priorityclass",
    "delete_resourcequota",
    "dependents",
    "discover_hypernodes",
    "initial_job_status",
    "issue_job_command",
    "next_run_name",
    "normalise_command_action",
    "pending_commands",
    "record_event",
    "run_again",
]
