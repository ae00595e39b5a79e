"""``vcctl sim ...``: fault injection on the simulated cluster, and ``vcctl node list`` / ``vcctl pod list``."""

from __future__ import annotations

import argparse
from typing import Any

from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context
from volcanoweb.cli.errors import usage_error


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``sim``, ``node`` and ``pod``."""
    group = sub.add_parser("sim", help="simulated cluster: fail or recover a node, end or evict a pod")
    sim = group.add_subparsers(dest="action_name", metavar="ACTION", required=True)

    fail = sim.add_parser("fail-node", parents=[common], help="make a node NotReady (its pods are lost)")
    fail.add_argument("node", help="node name")
    fail.add_argument("--keep-pods", action="store_true", help="do not evict the node's pods")
    fail.set_defaults(func=fail_node)

    recover = sim.add_parser("recover-node", parents=[common], help="make a failed node Ready again")
    recover.add_argument("node", help="node name")
    recover.set_defaults(func=recover_node)

    end = sim.add_parser("end-pod", parents=[common], help="end a running pod now with an exit code")
    end.add_argument("pod", help="pod name")
    end.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")
    end.add_argument("--exit-code", "-e", type=int, default=1, help="exit code 0-255 (default 1)")
    end.add_argument(
        "--restart-container",
        action="store_true",
        help="only the container exits; the pod's restartPolicy decides (OnFailure/Always: restarted in place)",
    )
    end.set_defaults(func=end_pod)

    evict = sim.add_parser("evict-pod", parents=[common], help="evict a pod")
    evict.add_argument("pod", help="pod name")
    evict.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")
    evict.set_defaults(func=evict_pod)

    nodes = sub.add_parser("node", help="cluster nodes")
    node_actions = nodes.add_subparsers(dest="action_name", metavar="ACTION", required=True)
    node_list = node_actions.add_parser("list", parents=[common], help="list nodes")
    node_list.set_defaults(func=list_nodes)

    hypernodes = sub.add_parser("hypernode", help="HyperNodes (the network topology)")
    hypernode_actions = hypernodes.add_subparsers(dest="action_name", metavar="ACTION", required=True)
    hypernode_list = hypernode_actions.add_parser("list", parents=[common], help="list HyperNodes, lowest tier first")
    hypernode_list.set_defaults(func=list_hypernodes)

    pods = sub.add_parser("pod", help="pods")
    pod_actions = pods.add_subparsers(dest="action_name", metavar="ACTION", required=True)
    pod_list = pod_actions.add_parser("list", parents=[common], help="list pods")
    pod_list.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")
    pod_list.add_argument("--all-namespaces", action="store_true", help="every namespace you can see")
    pod_list.add_argument("--job", "-j", default="", help="only the pods of this job")
    pod_list.set_defaults(func=list_pods)


def _node_line(ctx: Context, verb: str, node: dict[str, Any]) -> int:
    if ctx.output:
        output.emit(node, ctx.output)
    else:
        ready = "Ready" if (node.get("status") or {}).get("ready") else "NotReady"
        output.write(f"{verb} node {(node.get('metadata') or {}).get('name', '')} successfully ({ready})")
    return 0


def fail_node(ctx: Context) -> int:
    """``vcctl sim fail-node NAME``."""
    node = ctx.client.post(path("nodes", ctx.args.node, "fail"), {"evictPods": not ctx.args.keep_pods}) or {}
    return _node_line(ctx, "fail", node)


def recover_node(ctx: Context) -> int:
    """``vcctl sim recover-node NAME``."""
    return _node_line(ctx, "recover", ctx.client.post(path("nodes", ctx.args.node, "recover")) or {})


def _pod_line(ctx: Context, verb: str, pod: dict[str, Any]) -> int:
    if ctx.output:
        output.emit(pod, ctx.output)
    else:
        detail = f"phase {pod.get('phase', '')}"
        if pod.get("exitCode") is not None:
            detail += f", exit code {pod['exitCode']}"
        if pod.get("restartCount"):
            detail += f", restarts {pod['restartCount']}"
        output.write(f"{verb} pod {pod.get('namespace', '')}/{pod.get('name', '')} successfully ({detail})")
    return 0


def end_pod(ctx: Context) -> int:
    """``vcctl sim end-pod -n NS NAME --exit-code N``."""
    if not 0 <= ctx.args.exit_code <= 255:
        raise usage_error(f"--exit-code must be between 0 and 255, got {ctx.args.exit_code}")
    namespace = ctx.namespace(ctx.args.namespace)
    body = {"exitCode": ctx.args.exit_code, "restartContainer": ctx.args.restart_container}
    pod = ctx.client.post(path("namespaces", namespace, "pods", ctx.args.pod, "exit"), body)
    pod = pod or {}
    restarted = ctx.args.restart_container and pod.get("phase") == "Running"
    return _pod_line(ctx, "restart" if restarted else "end", pod)


def evict_pod(ctx: Context) -> int:
    """``vcctl sim evict-pod -n NS NAME``."""
    namespace = ctx.namespace(ctx.args.namespace)
    return _pod_line(ctx, "evict", ctx.client.post(path("namespaces", namespace, "pods", ctx.args.pod, "evict")) or {})


def list_hypernodes(ctx: Context) -> int:
    """``vcctl hypernode list``: Name Tier TierName Members."""
    body = ctx.client.list_all(path("hypernodes"))
    if ctx.output:
        output.emit(body, ctx.output)
        return 0
    rows = []
    for item in body["items"]:
        spec = item.get("spec") or {}
        members = []
        for m in spec.get("members") or []:
            sel = m.get("selector") or {}
            if sel.get("exactMatch"):
                members.append(str(sel["exactMatch"].get("name", "")))
            elif sel.get("regexMatch"):
                members.append(f"/{sel['regexMatch'].get('pattern', '')}/")
            else:
                members.append("labels")
        rows.append(
            [
                (item.get("metadata") or {}).get("name", ""),
                spec.get("tier", ""),
                spec.get("tierName", ""),
                ",".join(members),
            ]
        )
    output.table(["Name", "Tier", "TierName", "Members"], rows)
    return 0


def list_nodes(ctx: Context) -> int:
    """``vcctl node list``: Name Status CPU Memory Pods."""
    body = ctx.client.list_all(path("nodes"))
    if ctx.output:
        output.emit(body, ctx.output)
        return 0
    rows = []
    for node in body["items"]:
        status = node.get("status") or {}
        allocatable = status.get("allocatable") or {}
        rows.append(
            [
                (node.get("metadata") or {}).get("name", ""),
                "Ready" if status.get("ready") else "NotReady",
                status.get("kind", ""),
                allocatable.get("cpu", ""),
                allocatable.get("memory", ""),
                allocatable.get("nvidia.com/gpu", ""),
                status.get("podCount", 0),
            ]
        )
    output.table(("Name", "Status", "Kind", "CPU", "Memory", "GPU", "Pods"), rows)
    return 0


def list_pods(ctx: Context) -> int:
    """``vcctl pod list``: Name Ready Status Restart Age (+ Namespace with --all-namespaces)."""
    args = ctx.args
    params = {"job": args.job}
    if args.all_namespaces:
        body = ctx.client.list_all(path("pods"), **params)
    else:
        body = ctx.client.list_all(path("namespaces", ctx.namespace(args.namespace), "pods"), **params)
    if ctx.output:
        output.emit(body, ctx.output)
        return 0
    rows = []
    for pod in body["items"]:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        row = [
            meta.get("name", ""),
            status.get("phase", ""),
            spec.get("nodeName", ""),
            output.age(meta.get("creationTimestamp")),
        ]
        rows.append([meta.get("namespace", ""), *row] if args.all_namespaces else row)
    headers = ("Name", "Status", "Node", "Age")
    output.table(("Namespace", *headers) if args.all_namespaces else headers, rows)
    return 0
