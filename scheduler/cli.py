"""The what-if simulator command line (the only module of the core that does I/O)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from scheduler.config import DEFAULT_CONFIG, ConfigError, parse_config
from scheduler.cycle import run_cycle
from scheduler.manifests import ManifestError, load_manifests, snapshot_from_manifests
from scheduler.replay import CycleInputError, is_cycle_input, load_cycle_input
from scheduler.result import cycle_json
from scheduler.snapshot import advance

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
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"error: {message}\n")
    return 2


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (2 on invalid input)."""
    args = _parser().parse_args(argv)
    if args.cycles < 1:
        return _fail("--cycles must be at least 1")
    try:
        state_text = _read(args.state)
    except OSError as exc:
        return _fail(f"{args.state}: {exc.strerror or exc}")
    config = DEFAULT_CONFIG
    recorded_snapshot = None
    if is_cycle_input(state_text):
        try:
            recorded_snapshot, config, _doc = load_cycle_input(state_text)
        except (CycleInputError, ConfigError) as exc:
            return _fail(f"{args.state}: {exc}")
    if args.conf:
        try:
            config = parse_config(_read(args.conf))
        except OSError as exc:
            return _fail(f"{args.conf}: {exc.strerror or exc}")
        except ConfigError as exc:
            return _fail(f"{args.conf}: {exc}")
    try:
        snapshot = (
            recorded_snapshot if recorded_snapshot is not None else snapshot_from_manifests(load_manifests(state_text))
        )
    except ManifestError as exc:
        return _fail(f"{args.state}: {exc}")
    cycles: list[Any] = []
    for _ in range(args.cycles):
        result = run_cycle(snapshot, config)
        cycles.append(result.to_json() if args.details else cycle_json(result))
        snapshot = advance(snapshot, result)
    sys.stdout.write(json.dumps({"cycles": cycles}, indent=2, sort_keys=True) + "\n")
    return 0
