"""``vcctl queue create|list|get|operate|history|delete`` (vcctl's queue commands; ``-n`` is the queue name)."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from typing import Any

from scheduler.quantity import format_quantity
from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context, split_key_values
from volcanoweb.cli.errors import usage_error
from volcanoweb.core.csvsafe import safe_row

QUEUE_API = "scheduling.volcano.sh/v1beta1"
ALLOWED_TENANTS = "volcanoweb.io/allowed-tenants"
HEADERS = ("Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed")
ACTIONS = ("open", "close", "update")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``queue`` command group."""
    group = sub.add_parser("queue", help="queues: create, list, get, operate, delete")
    queues = group.add_subparsers(dest="action_name", metavar="ACTION", required=True)

    create = queues.add_parser("create", parents=[common], help="create a queue")
    create.add_argument("--name", "-n", "-N", default="test", help="queue name (default test)")
    create.add_argument("--weight", "-w", type=int, default=1, help="weight (default 1)")
    create.add_argument("--state", "-S", default="Open", choices=("Open", "Closed"), help="state (default Open)")
    create.add_argument("--parent", "-p", default="", help="parent queue (hierarchical queues; default root)")
    create.add_argument("--capability", "-c", default="", help="capability, e.g. cpu=8,memory=16Gi")
    create.add_argument("--guarantee", "-g", default="", help="guaranteed resources, e.g. cpu=2,memory=4Gi")
    create.add_argument("--deserved", "-d", default="", help="deserved resources (capacity plugin)")
    create.add_argument("--reclaimable", choices=("true", "false"), default=None, help="may others reclaim from it")
    create.add_argument("--priority", type=int, default=None, help="queue priority")
    create.add_argument("--tenants", default="", help="tenants allowed to submit, comma-separated")
    create.set_defaults(func=create_queue)

    lst = queues.add_parser("list", parents=[common], help="list queues")
    lst.set_defaults(func=list_queues)

    get = queues.add_parser("get", parents=[common], help="show one queue")
    get.add_argument("--name", "-n", "-N", default="", help="queue name")
    get.set_defaults(func=get_queue)

    operate = queues.add_parser("operate", parents=[common], help="open, close or update (weight) a queue")
    operate.add_argument("--name", "-n", "-N", default="", help="queue name")
    operate.add_argument("--action", "-a", default="", help="open, close or update")
    operate.add_argument("--weight", "-w", type=int, default=0, help="new weight (with --action update)")
    operate.set_defaults(func=operate_queue)

    history = queues.add_parser("history", parents=[common], help="a queue's allocated/deserved/guarantee over time")
    history.add_argument("--name", "-n", "-N", default="", help="queue name")
    history.add_argument("--from", dest="start", default="", help="ISO time or a duration ago (1h, 7d); default 1h")
    history.add_argument("--to", dest="end", default="", help="ISO time, 'now' (default) or a duration ago")
    history.add_argument("--step", default="", help="seconds or 30s/5m/1h per point (default: chosen by range)")
    history.add_argument("--resource", "-r", default="cpu", help="resource shown in the table (default cpu)")
    history.add_argument("--csv", action="store_true", help="print every resource as CSV")
    history.set_defaults(func=queue_history)

    delete = queues.add_parser("delete", parents=[common], help="delete a queue")
    delete.add_argument("--name", "-n", "-N", default="", help="queue name")
    delete.set_defaults(func=delete_queue)


def build_queue(args: argparse.Namespace) -> dict[str, Any]:
    """Return the Queue manifest for ``queue create``'s flags."""
    if args.weight < 1:
        raise usage_error("--weight must be a positive integer")
    spec: dict[str, Any] = {"weight": args.weight}
    if args.parent:
        spec["parent"] = args.parent
    if args.capability:
        spec["capability"] = split_key_values(args.capability, "--capability")
    if args.guarantee:
        spec["guarantee"] = {"resource": split_key_values(args.guarantee, "--guarantee")}
    if args.deserved:
        spec["deserved"] = split_key_values(args.deserved, "--deserved")
    if args.reclaimable is not None:
        spec["reclaimable"] = args.reclaimable == "true"
    if args.priority is not None:
        spec["priority"] = args.priority
    metadata: dict[str, Any] = {"name": args.name}
    if args.tenants:
        metadata["annotations"] = {ALLOWED_TENANTS: ",".join(t.strip() for t in args.tenants.split(",") if t.strip())}
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": metadata, "spec": spec}


def create_queue(ctx: Context) -> int:
    """``vcctl queue create``; ``--state Closed`` closes the new queue right away."""
    args = ctx.args
    queue = ctx.client.post(path("queues"), build_queue(args)) or {}
    if args.state == "Closed":
        queue = ctx.client.post(path("queues", args.name, "close")) or queue
    if ctx.output:
        output.emit(queue, ctx.output)
    else:
        output.write(f"create queue {args.name} successfully")
    return 0


def queue_row(queue: dict[str, Any]) -> list[Any]:
    """Return vcctl's queue columns."""
    meta, spec, status = queue.get("metadata") or {}, queue.get("spec") or {}, queue.get("status") or {}
    name = meta.get("name", "")
    parent = spec.get("parent") or ("" if name == "root" else "root")
    return [
        name,
        spec.get("weight", 1),
        status.get("state", ""),
        parent,
        status.get("inqueue", 0),
        status.get("pending", 0),
        status.get("running", 0),
        status.get("unknown", 0),
        status.get("completed", 0),
    ]


def list_queues(ctx: Context) -> int:
    """``vcctl queue list``."""
    body = ctx.client.list_all(path("queues"))
    if ctx.output:
        output.emit(body, ctx.output)
    else:
        output.table(HEADERS, [queue_row(q) for q in body["items"]])
    return 0


def _name(ctx: Context) -> str:
    if not ctx.args.name:
        raise usage_error("queue name must be specified")
    return str(ctx.args.name)


def get_queue(ctx: Context) -> int:
    """``vcctl queue get``."""
    queue = ctx.client.get(path("queues", _name(ctx))) or {}
    if ctx.output:
        output.emit(queue, ctx.output)
    else:
        output.table(HEADERS, [queue_row(queue)])
    return 0


def operate_queue(ctx: Context) -> int:
    """``vcctl queue operate``: open, close, or update the weight."""
    args = ctx.args
    name = _name(ctx)
    action = args.action
    if not action:
        raise usage_error("action can not be null")
    if action not in ACTIONS:
        raise usage_error(f"action {action} invalid, valid actions are open, close and update")
    if action == "update":
        if args.weight <= 0:
            raise usage_error(f"when update queue {name}, weight must be specified, the value must be greater than 0")
        queue = ctx.client.get(path("queues", name)) or {}
        queue.setdefault("spec", {})["weight"] = args.weight
        queue.pop("status", None)
        result = ctx.client.put(path("queues", name), queue)
    else:
        result = ctx.client.post(path("queues", name, action))
    if ctx.output:
        output.emit(result, ctx.output)
    else:
        state = ((result or {}).get("status") or {}).get("state", "")
        suffix = f" (state {state})" if state and action != "update" else ""
        output.write(f"{action} queue {name} successfully{suffix}")
    return 0


def delete_queue(ctx: Context) -> int:
    """``vcctl queue delete``."""
    name = _name(ctx)
    result = ctx.client.delete(path("queues", name))
    if ctx.output:
        output.emit(result, ctx.output)
    else:
        output.write(f"delete queue {name} successfully")
    return 0


HISTORY_FIELDS = ("allocated", "deserved", "guarantee", "capability", "demand")


def _quantity(resource: str, value: Any) -> str:
    if value in (None, ""):
        return "-"
    return format_quantity(resource, math.ceil(float(value)))


def queue_history(ctx: Context) -> int:
    """``vcctl queue history``: a table for one resource, CSV for all, or the raw JSON/YAML."""
    args = ctx.args
    name = _name(ctx)
    body = ctx.client.get(path("queues", name, "history"), **{"from": args.start, "to": args.end, "step": args.step})
    body = body or {}
    if ctx.output:
        output.emit(body, ctx.output)
        return 0
    points = body.get("points") or []
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(safe_row(["time", "queue", "resource", *HISTORY_FIELDS]))
        for point in points:
            for resource in body.get("resources") or []:
                cells = [point["time"], name, resource, *(point[f].get(resource, "") for f in HISTORY_FIELDS)]
                writer.writerow(safe_row(cells))
        return 0
    resource = args.resource
    rows = [
        [point["time"][:19], *(_quantity(resource, point[f].get(resource)) for f in HISTORY_FIELDS), point["samples"]]
        for point in points
    ]
    output.table(("Time", "Allocated", "Deserved", "Guarantee", "Capability", "Demand", "Samples"), rows)
    for marker in body.get("markers") or []:
        output.write(f"{marker['time'][:19]}  change: {marker['text']}")
    return 0
