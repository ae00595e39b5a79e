"""``vcctl cronjob list|get|suspend|resume|run`` (columns as ``kubectl get cronjobs``; ``run`` is
``kubectl create job --from=cronjob/NAME``)."""

from __future__ import annotations

import argparse
from datetime import UTC
from typing import Any

from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context
from volcanoweb.cli.errors import usage_error

HEADERS = ("Name", "Namespace", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age")
HISTORY_HEADERS = ("Job", "Phase", "Started", "Finished")
FINISHED = ("Completed", "Failed", "Terminated")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``cronjob`` command group."""
    group = sub.add_parser("cronjob", help="CronJobs: list, get, suspend, resume, run now")
    actions = group.add_subparsers(dest="action_name", metavar="ACTION", required=True)

    lst = actions.add_parser("list", parents=[common], help="list CronJobs")
    _namespace(lst)
    lst.add_argument("--all-namespaces", action="store_true", help="every namespace you can see")
    lst.set_defaults(func=list_cronjobs)

    get = actions.add_parser("get", parents=[common], help="show one CronJob and its jobs (history)")
    _name(get)
    get.set_defaults(func=get_cronjob)

    for verb, text in (
        ("suspend", "suspend a CronJob (no new jobs until resumed)"),
        ("resume", "resume a suspended CronJob"),
        ("run", "create one job from the CronJob now (its concurrency policy is not applied)"),
    ):
        parser = actions.add_parser(verb, parents=[common], help=text)
        _name(parser)
        parser.set_defaults(func=act, verb=verb)


def _namespace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")


def _name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name_arg", nargs="?", default="", metavar="NAME", help="CronJob name")
    parser.add_argument("--name", "-N", default="", help="CronJob name")
    _namespace(parser)


def _target(ctx: Context) -> tuple[str, str]:
    name = ctx.args.name or ctx.args.name_arg
    if not name:
        raise usage_error("cronjob name (NAME, --name or -N) is mandatory")
    return ctx.namespace(ctx.args.namespace), str(name)


def cronjob_row(obj: dict[str, Any]) -> list[Any]:
    """Return the list columns of one CronJob."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    return [
        meta.get("name", ""),
        meta.get("namespace", ""),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        "True" if spec.get("suspend") else "False",
        len(status.get("active") or []),
        output.age(last) if last else "<none>",
        output.age(meta.get("creationTimestamp")),
    ]


def list_cronjobs(ctx: Context) -> int:
    """``vcctl cronjob list``."""
    if ctx.args.all_namespaces:
        body = ctx.client.list_all(path("cronjobs"))
    else:
        body = ctx.client.list_all(path("namespaces", ctx.namespace(ctx.args.namespace), "cronjobs"))
    if ctx.output:
        output.emit(body, ctx.output)
    else:
        output.table(HEADERS, [cronjob_row(o) for o in body["items"]])
    return 0


def _history(ctx: Context, namespace: str, uid: str) -> list[dict[str, Any]]:
    jobs = ctx.client.list_all(path("namespaces", namespace, "jobs"))["items"]
    owned = [
        job
        for job in jobs
        if any(ref.get("uid") == uid for ref in (job.get("metadata") or {}).get("ownerReferences") or [])
    ]
    return sorted(owned, key=lambda j: (j["metadata"].get("creationTimestamp") or "", j["metadata"]["name"]))


def _when(value: Any) -> str:
    parsed = output.parse_time(value)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if parsed else "<none>"


def _history_row(job: dict[str, Any]) -> list[Any]:
    state = (job.get("status") or {}).get("state") or {}
    phase = state.get("phase", "")
    finished = _when(state.get("lastTransitionTime")) if phase in FINISHED else "<none>"
    return [job["metadata"]["name"], phase, _when(job["metadata"].get("creationTimestamp")), finished]


def get_cronjob(ctx: Context) -> int:
    """``vcctl cronjob get``: the CronJob's row, then its jobs (oldest first)."""
    namespace, name = _target(ctx)
    obj = ctx.client.get(path("namespaces", namespace, "cronjobs", name)) or {}
    if ctx.output:
        output.emit(obj, ctx.output)
        return 0
    output.table(HEADERS, [cronjob_row(obj)])
    history = _history(ctx, namespace, str((obj.get("metadata") or {}).get("uid", "")))
    output.write()
    if history:
        output.table(HISTORY_HEADERS, [_history_row(job) for job in history])
    else:
        output.write("No jobs.")
    return 0


def act(ctx: Context) -> int:
    """``vcctl cronjob suspend|resume|run``."""
    namespace, name = _target(ctx)
    verb = ctx.args.verb
    result = ctx.client.post(path("namespaces", namespace, "cronjobs", name, verb)) or {}
    if ctx.output:
        output.emit(result, ctx.output)
    elif verb == "run":
        output.write(f"job {(result.get('metadata') or {}).get('name', '')} created from cronjob {name}")
    else:
        output.write(f"{verb} cronjob {name} successfully")
    return 0
