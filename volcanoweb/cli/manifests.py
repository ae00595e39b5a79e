"""``vcctl apply -f FILE`` (multi-document, atomic, ``--dry-run``) and ``vcctl simulate -f FILE`` (what-if)."""

from __future__ import annotations

import argparse
from typing import Any

from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context, read_manifest

#: Kubernetes-style resource names for apply's ``kind/name action`` lines.
RESOURCE_NAMES = {
    "Job": "job.batch.volcano.sh",
    "PodGroup": "podgroup.scheduling.volcano.sh",
    "Queue": "queue.scheduling.volcano.sh",
    "Pod": "pod",
    "PriorityClass": "priorityclass.scheduling.k8s.io",
    "HyperNode": "hypernode.topology.volcano.sh",
    "CronJob": "cronjob.batch.volcano.sh",
    "JobFlow": "jobflow.flow.volcano.sh",
    "JobTemplate": "jobtemplate.flow.volcano.sh",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``apply`` and ``simulate``."""
    apply = sub.add_parser(
        "apply", parents=[common], help="create or update every object of a manifest, all or nothing"
    )
    apply.add_argument("--filename", "-f", required=True, help="YAML or JSON file, several --- documents; - is stdin")
    apply.add_argument("--namespace", "-n", default="", help="namespace for objects that name none")
    apply.add_argument("--dry-run", action="store_true", help="validate and report, change nothing")
    apply.set_defaults(func=apply_manifest)

    simulate = sub.add_parser(
        "simulate", parents=[common], help="what-if: would this manifest be admitted and placed right now?"
    )
    simulate.add_argument("--filename", "-f", required=True, help="YAML or JSON file; - is stdin")
    simulate.add_argument("--namespace", "-n", default="", help="namespace for objects that name none")
    simulate.set_defaults(func=simulate_manifest)


def _namespace_param(ctx: Context) -> str:
    return ctx.args.namespace or ctx.settings.namespace


def apply_manifest(ctx: Context) -> int:
    """``vcctl apply``: POST /api/v1/apply (``?dryRun=true``); one ``kind/name action`` line per object."""
    text, _ = read_manifest(ctx.args.filename)
    result = (
        ctx.client.post_text(
            path("apply"), text, dryRun="true" if ctx.args.dry_run else "", namespace=_namespace_param(ctx)
        )
        or {}
    )
    if ctx.output:
        output.emit(result, ctx.output)
        return 0
    suffix = " (dry run)" if result.get("dryRun") else ""
    for item in result.get("items") or []:
        resource = RESOURCE_NAMES.get(str(item.get("kind")), str(item.get("kind", "")).lower())
        output.write(f"{resource}/{item.get('name', '')} {item.get('action', '')}{suffix}")
    return 0


def simulate_manifest(ctx: Context) -> int:
    """``vcctl simulate``: POST /api/v1/simulate; report admitted or not, placements and reasons."""
    text, _ = read_manifest(ctx.args.filename)
    result = ctx.client.post_text(path("simulate"), text, namespace=_namespace_param(ctx)) or {}
    if ctx.output:
        output.emit(result, ctx.output)
        return 0
    render_simulation(result)
    return 0


def render_simulation(result: dict[str, Any]) -> None:
    """Write a what-if report: one block per job (admitted or not, where, why not), then evictions."""
    jobs = result.get("jobs") or []
    if not jobs:
        output.write("The manifest holds no jobs or pods to schedule.")
    for job in jobs:
        if job.get("scheduled"):
            verdict = "admitted and scheduled"
        elif job.get("admitted"):
            verdict = "admitted, not (fully) scheduled"
        else:
            verdict = "NOT admitted"
        output.write(f"{job.get('kind', 'Job')} {job.get('namespace', '')}/{job.get('name', '')}: {verdict}")
        output.write(
            f"  queue {job.get('queue', '')}, phase {job.get('phase', '')}, "
            f"{job.get('placed', 0)}/{job.get('pods', 0)} pods placed (minMember {job.get('minMember', 0)})"
        )
        placements = job.get("placements") or []
        if placements:
            output.table(
                ("  Pod", "Node", "How"),
                [["  " + str(p.get("pod", "")), p.get("node", ""), p.get("how", "")] for p in placements],
            )
        reason = job.get("reason")
        if reason:
            output.write(f"  why not: {reason.get('message', '')} [{reason.get('kind', '')}]")
            for predicate, count in (reason.get("fitErrors") or {}).items():
                output.write(f"    {count} node(s): {predicate}")
    evictions = result.get("evictions") or []
    if evictions:
        output.write("Would evict:")
        for e in evictions:
            output.write(f"  {e.get('pod', '')} on {e.get('node', '')} ({e.get('action', '')}: {e.get('reason', '')})")
