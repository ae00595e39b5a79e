"""The cycle input file itself: an encoded snapshot and a configuration (plus what the recorded cycle
decided) as one JSON document, written, recognised and loaded."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scheduler.config import dump_config, parse_config
from scheduler.config_types import SchedulerConfig
from scheduler.replay.decoding import decode_snapshot
from scheduler.replay.format import API_VERSION, KIND, CycleInputError, dumps
from scheduler.snapshot import Snapshot


def cycle_input_text(
    snapshot_text: str,
    config: SchedulerConfig | str,
    *,
    cycle: int = 0,
    recorded: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Return the text of a cycle input file: encoded snapshot text plus a configuration (or its YAML).

    ``recorded`` is what the live cycle decided (``scheduler.result.cycle_json``), kept so that a replay
    can be compared with it; ``metadata`` is free-form information (time, configuration version).
    """
    head: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "cycle": cycle,
        "config": config if isinstance(config, str) else dump_config(config),
    }
    if metadata:
        head["metadata"] = dict(metadata)
    if recorded is not None:
        head["recorded"] = dict(recorded)
    return dumps(head)[:-1] + ',"snapshot":' + snapshot_text + "}\n"


def is_cycle_input(text: str) -> bool:
    """Return whether ``text`` looks like a cycle input file (JSON with our apiVersion/kind)."""
    head = text.lstrip()[:1]
    if head != "{":
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == KIND and data.get("apiVersion") == API_VERSION


def load_cycle_input(text: str) -> tuple[Snapshot, SchedulerConfig, dict[str, Any]]:
    """Return the snapshot, the configuration and the whole document of a cycle input file."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CycleInputError("(file)", f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("apiVersion") != API_VERSION:
        raise CycleInputError("kind", f"expected apiVersion {API_VERSION} and kind {KIND}")
    config_text = data.get("config")
    if not isinstance(config_text, str):
        raise CycleInputError("config", "expected the scheduler configuration as YAML text")
    config = parse_config(config_text)
    return decode_snapshot(data.get("snapshot")), config, data
