"""``vcctl job run|list|view|suspend|resume|delete`` (Volcano's vcctl job commands)."""

from __future__ import annotations

import argparse
from typing import Any

from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context, mapping, read_manifest, split_key_values
from volcanoweb.cli.errors import usage_error

JOB_API = "batch.volcano.sh/v1alpha1"
DEFAULT_RESOURCES = "cpu=1000m,memory=100Mi"
LIST_HEADERS = (
    "Name",
    "Creation",
    "Phase",
    "JobType",
    "Replicas",
    "Min",
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Unknown",
    "RetryCount",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``job`` command group."""
    group = sub.add_parser("job", help="Volcano jobs: run, list, view, suspend, resume, delete")
    jobs = group.add_subparsers(dest="action", metavar="ACTION", required=True)

    run = jobs.add_parser("run", parents=[common], help="run a job from a YAML file or from flags")
    run.add_argument("--name", "-N", default="", help="job name (required unless --filename)")
    _namespace(run)
    run.add_argument("--image", "-i", default="busybox", help="container image (default busybox)")
    run.add_argument("--min", "-m", type=int, default=1, help="minAvailable (default 1)")
    run.add_argument("--replicas", "-r", type=int, default=1, help="replicas of the task (default 1)")
    run.add_argument("--requests", "-R", default=DEFAULT_RESOURCES, help=f"requests (default {DEFAULT_RESOURCES})")
    run.add_argument("--limits", "-L", default=DEFAULT_RESOURCES, help=f"limits (default {DEFAULT_RESOURCES})")
    run.add_argument("--scheduler", "-S", default="volcano", help="scheduler name (default volcano)")
    run.add_argument("--queue", "-q", default="", help="queue (default: the server's, i.e. default)")
    run.add_argument("--filename", "-f", default="", help="a job's YAML file (.yaml or .yml)")
    run.set_defaults(func=run_job)

    lst = jobs.add_parser("list", parents=[common], help="list jobs")
    _namespace(lst)
    lst.add_argument("--all-namespaces", action="store_true", help="list jobs in every namespace you can see")
    lst.add_argument("--queue", "-q", default="", help="only jobs of this queue")
    lst.add_argument("--scheduler", "-S", default="", help="only jobs of this scheduler")
    lst.add_argument("--selector", default="", help="only jobs whose name contains this text")
    lst.add_argument("--label-selector", "-l", default="", help="Kubernetes label selector, e.g. app=x,tier!=db")
    lst.set_defaults(func=list_jobs)

    for name, func, text in (
        ("view", view_job, "show a job in detail, with its events"),
        ("suspend", suspend_job, "suspend (abort) a job"),
        ("resume", resume_job, "resume a suspended job"),
        ("delete", delete_job, "delete a job"),
    ):
        cmd = jobs.add_parser(name, parents=[common], help=text)
        cmd.add_argument("--name", "-N", default="", help="job name")
        _namespace(cmd)
        cmd.set_defaults(func=func)


def _namespace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")


def build_job(args: argparse.Namespace) -> dict[str, Any]:
    """Return vcctl's one-task Job for the quick flags (the task is unnamed: the server names it default0)."""
    if args.min < 0 or args.replicas < 0:
        raise usage_error("--min and --replicas must not be negative")
    requests = split_key_values(args.requests, "--requests")
    limits = split_key_values(args.limits, "--limits")
    container = {
        "name": args.name,
        "image": args.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": requests, "limits": limits},
    }
    spec: dict[str, Any] = {
        "minAvailable": args.min,
        "schedulerName": args.scheduler,
        "tasks": [
            {
                "replicas": args.replicas,
                "template": {
                    "metadata": {"name": args.name, "labels": {"job.volcano.sh": args.name}},
                    "spec": {"restartPolicy": "Never", "containers": [container]},
                },
            }
        ],
    }
    if args.queue:
        spec["queue"] = args.queue
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": {"name": args.name}, "spec": spec}


def run_job(ctx: Context) -> int:
    """``vcctl job run``: submit a job from a file or from the quick flags."""
    args = ctx.args
    if args.filename:
        if not args.filename.endswith((".yaml", ".yml")) and args.filename != "-":
            raise usage_error("only support yaml file")
        _, docs = read_manifest(args.filename)
        if len(docs) != 1 or docs[0].get("kind") != "Job":
            kinds = ", ".join(str(d.get("kind")) for d in docs)
            raise usage_error(f"{args.filename} must hold exactly one Job (found: {kinds}); use vcctl apply for more")
        job = docs[0]
    else:
        if not args.name:
            raise usage_error("job name cannot be left blank")
        job = build_job(args)
    meta = mapping(job, "metadata")
    namespace = ctx.namespace(args.namespace or str(meta.get("namespace") or ""))
    created = ctx.client.post(path("namespaces", namespace, "jobs"), job) or {}
    name = (created.get("metadata") or {}).get("name") or meta.get("name") or args.name
    if ctx.output:
        output.emit(created, ctx.output)
    else:
        output.write(f"run job {name} successfully")
    return 0


def _replicas(job: dict[str, Any]) -> int:
    total = 0
    for task in (job.get("spec") or {}).get("tasks") or []:
        if isinstance(task, dict) and isinstance(task.get("replicas"), int):
            total += task["replicas"]
    return total


def job_row(job: dict[str, Any]) -> list[Any]:
    """Return vcctl's list columns for a job."""
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    labels = meta.get("labels") or {}
    return [
        meta.get("name", ""),
        output.date(meta.get("creationTimestamp")),
        (status.get("state") or {}).get("phase") or "Pending",
        labels.get("volcano.sh/job-type") or "Batch",
        _replicas(job),
        status.get("minAvailable", spec.get("minAvailable", 0)),
        status.get("pending", 0),
        status.get("running", 0),
        status.get("succeeded", 0),
        status.get("failed", 0),
        status.get("unknown", 0),
        status.get("retryCount", 0),
    ]


def list_jobs(ctx: Context) -> int:
    """``vcctl job list``."""
    args = ctx.args
    params = {"queue": args.queue, "labelSelector": args.label_selector}
    if args.all_namespaces:
        body = ctx.client.list_all(path("jobs"), **params)
    else:
        body = ctx.client.list_all(path("namespaces", ctx.namespace(args.namespace), "jobs"), **params)
    items = [
        j
        for j in body["items"]
        if args.selector in str((j.get("metadata") or {}).get("name", ""))
        and (not args.scheduler or (j.get("spec") or {}).get("schedulerName", "volcano") == args.scheduler)
    ]
    if ctx.output:
        output.emit({**body, "items": items}, ctx.output)
        return 0
    headers: tuple[str, ...] = LIST_HEADERS
    rows = [job_row(j) for j in items]
    if args.all_namespaces:
        headers = ("Namespace", *LIST_HEADERS)
        rows = [[(j.get("metadata") or {}).get("namespace", ""), *row] for j, row in zip(items, rows, strict=True)]
    output.table(headers, rows)
    return 0


def _required_name(ctx: Context, message: str) -> tuple[str, str]:
    if not ctx.args.name:
        raise usage_error(message)
    return ctx.namespace(ctx.args.namespace), ctx.args.name


def view_job(ctx: Context) -> int:
    """``vcctl job view``: a describe-style dump and the job's events."""
    namespace, name = _required_name(ctx, "job name (specified by --name or -N) is mandatory to view a particular job")
    job = ctx.client.get(path("namespaces", namespace, "jobs", name)) or {}
    if ctx.output:
        output.emit(job, ctx.output)
        return 0
    meta = job.get("metadata") or {}
    summary: dict[str, Any] = {
        "Name": meta.get("name"),
        "Namespace": meta.get("namespace"),
        "Labels": meta.get("labels") or {},
        "Annotations": meta.get("annotations") or {},
        "API Version": job.get("apiVersion"),
        "Kind": job.get("kind"),
        "Metadata": {
            "Creation Timestamp": meta.get("creationTimestamp"),
            "Resource Version": meta.get("resourceVersion"),
            "UID": meta.get("uid"),
        },
        "Spec": job.get("spec") or {},
        "Status": job.get("status") or {},
    }
    for line in output.describe(summary):
        output.write(line)
    events = ctx.client.get(
        path("namespaces", namespace, "events"), involvedKind="Job", involvedName=name, limit=100
    ) or {"items": []}
    output.write("Events:")
    rows = [
        [
            e.get("type", ""),
            e.get("reason", ""),
            output.age(e.get("lastTimestamp")),
            (e.get("source") or {}).get("component", ""),
            e.get("message", ""),
        ]
        for e in reversed(events.get("items") or [])
    ]
    if rows:
        output.table(("  Type", "Reason", "Age", "From", "Message"), [["  " + str(r[0]), *r[1:]] for r in rows])
    else:
        output.write("  <none>")
    return 0


def _command(ctx: Context, action: str, verb: str) -> int:
    namespace, name = _required_name(ctx, f"job name is mandatory to {verb} a particular job")
    command = ctx.client.post(path("namespaces", namespace, "jobs", name, "commands"), {"action": action})
    if ctx.output:
        output.emit(command, ctx.output)
    else:
        output.write(f"{verb} job {name} successfully")
    return 0


def suspend_job(ctx: Context) -> int:
    """``vcctl job suspend``: Command AbortJob."""
    return _command(ctx, "AbortJob", "suspend")


def resume_job(ctx: Context) -> int:
    """``vcctl job resume``: Command ResumeJob."""
    return _command(ctx, "ResumeJob", "resume")


def delete_job(ctx: Context) -> int:
    """``vcctl job delete``."""
    namespace, name = _required_name(ctx, "job name is mandatory to delete a particular job")
    deleted = ctx.client.delete(path("namespaces", namespace, "jobs", name))
    if ctx.output:
        output.emit(deleted, ctx.output)
    else:
        output.write(f"delete job {name} successfully")
    return 0
