"""The what-if simulator command line (the only module of the core that does I/O)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from scheduler.config import DEFAULT_CONFIG, ConfigError, parse_config
from scheduler.config_types import SchedulerConfig
from scheduler.cycle import run_cycle
from scheduler.decode import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.explain import explain
from scheduler.replay import CycleInputError, is_cycle_input, load_cycle_input
from scheduler.result import cycle_json
from scheduler.snapshot import Snapshot, advance

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler", description="Volcano scheduler core, what-if simulator."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run scheduling cycles over manifests; print JSON")
    sim.add_argument(
        "state",
        help="multi-document YAML of Nodes, Pods, PodGroups, Queues, PriorityClasses, "
        "or a recorded cycle input file (JSON, kind CycleInput)",
    )
    sim.add_argument(
        "--conf", help="Volcano scheduler configuration YAML (default: Volcano's, or the cycle input's own)"
    )
    sim.add_argument("--cycles", type=int, default=1, help="number of cycles (default 1)")
    sim.add_argument("--details", action="store_true", help="print the full structured result of each cycle")
    sim.add_argument(
        "--now", help="the clock: seconds since the epoch or an RFC 3339 time (default: none; sla and cdp read it)"
    )
    hooks = sim.add_argument_group(
        "plugin hooks", "answer a plugin hook on the opened session instead of running cycles (JSON under 'explain')"
    )
    hooks.add_argument("--explain-node-scores", action="store_true", help="node-order scores of each pending pod")
    hooks.add_argument(
        "--explain-predicates", action="store_true", help="each node's first failing predicate per pending pod"
    )
    hooks.add_argument("--explain-job-order", action="store_true", help="every job in job order")
    hooks.add_argument("--explain-enqueue", action="store_true", help="whether each Pending PodGroup is enqueueable")
    hooks.add_argument(
        "--explain-victim-tasks", action="store_true", help="the running pods the plugins want evicted (shuffle's)"
    )
    hooks.add_argument(
        "--explain-victims", metavar="JOB", help="pods a job's pending pods may preempt or reclaim (ns/name)"
    )
    hooks.add_argument("--explain-hypernodes", metavar="JOB", help="a job's topology, HyperNode gradients and scores")
    hooks.add_argument("--task", help="only this pending pod (ns/name) for node scores and predicates")
    hooks.add_argument("--nodes", help="comma-separated: the candidate nodes scored together (default all)")
    hooks.add_argument(
        "--spans",
        metavar="HYPERNODE",
        help="for node scores: the HyperNode the scored pods' jobs span, as allocate says while it tries a job "
        "inside it (default: the one a topology job's placed pods span)",
    )
    return parser


def _clock(text: str) -> float:
    """``--now``: seconds since the epoch, or an RFC 3339 time."""
    try:
        return float(text)
    except ValueError:
        pass
    from scheduler.decode import timestamp

    return timestamp(text)


def _fail(message: str) -> int:
    sys.stderr.write(f"error: {message}\n")
    return 2


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


class _BadInput(Exception):
    """An input the CLI cannot use; the message is printed as the error."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (2 on invalid input)."""
    args = _parser().parse_args(argv)
    if args.cycles < 1:
        return _fail("--cycles must be at least 1")
    if args.spans and not args.explain_node_scores:
        return _fail("--spans goes with --explain-node-scores")
    try:
        snapshot, config = _inputs(args)
    except _BadInput as exc:
        return _fail(str(exc))
    what = [
        name
        for name, on in (
            ("node-scores", args.explain_node_scores),
            ("predicates", args.explain_predicates),
            ("job-order", args.explain_job_order),
            ("enqueue", args.explain_enqueue),
            ("victim-tasks", args.explain_victim_tasks),
            ("victims", args.explain_victims),
            ("hypernodes", args.explain_hypernodes),
        )
        if on
    ]
    if what:
        return _explain(args, snapshot, config, what)
    cycles: list[Any] = []
    for _ in range(args.cycles):
        result = run_cycle(snapshot, config)
        cycles.append(result.to_json() if args.details else cycle_json(result))
        snapshot = advance(snapshot, result)
    sys.stdout.write(json.dumps({"cycles": cycles}, indent=2, sort_keys=True) + "\n")
    return 0


def _inputs(args: argparse.Namespace) -> tuple[Snapshot, SchedulerConfig]:
    """The snapshot (a cycle input file or manifests, with ``--now``) and the configuration (the cycle
    input's, replaced by ``--conf``); raises :class:`_BadInput`."""
    try:
        state_text = _read(args.state)
    except OSError as exc:
        raise _BadInput(f"{args.state}: {exc.strerror or exc}") from None
    config = DEFAULT_CONFIG
    recorded_snapshot = None
    if is_cycle_input(state_text):
        try:
            recorded_snapshot, config, _doc = load_cycle_input(state_text)
        except (CycleInputError, ConfigError) as exc:
            raise _BadInput(f"{args.state}: {exc}") from None
    if args.conf:
        try:
            config = parse_config(_read(args.conf))
        except OSError as exc:
            raise _BadInput(f"{args.conf}: {exc.strerror or exc}") from None
        except ConfigError as exc:
            raise _BadInput(f"{args.conf}: {exc}") from None
    try:
        snapshot = (
            recorded_snapshot if recorded_snapshot is not None else snapshot_from_manifests(load_manifests(state_text))
        )
    except ManifestError as exc:
        raise _BadInput(f"{args.state}: {exc}") from None
    if args.now:
        try:
            snapshot = replace(snapshot, now=_clock(args.now))
        except ValueError as exc:
            raise _BadInput(f"--now: {exc}") from None
    return snapshot, config


def _explain(args: argparse.Namespace, snapshot: Snapshot, config: SchedulerConfig, what: list[str]) -> int:
    """Print the plugin hooks' answers ``what`` names (``--explain-*``); return the exit status."""
    if args.explain_victims and args.explain_hypernodes and args.explain_victims != args.explain_hypernodes:
        return _fail("--explain-victims and --explain-hypernodes name one job")
    nodes = [n.strip() for n in (args.nodes or "").split(",") if n.strip()]
    try:
        job = args.explain_victims or args.explain_hypernodes
        answers = explain(snapshot, config, what, task=args.task, nodes=nodes, job=job, spans=args.spans)
    except KeyError as exc:
        return _fail(str(exc.args[0]) if exc.args else str(exc))
    sys.stdout.write(json.dumps({"explain": answers}, indent=2, sort_keys=True) + "\n")
    return 0
