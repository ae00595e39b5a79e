"""Cycle input files: lossless snapshot encoding and offline replay by ``python -m scheduler simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler import parse_config, run_cycle
from scheduler.cli import main
from scheduler.replay import (
    CycleInputError,
    SnapshotEncoder,
    cycle_input_text,
    decode_snapshot,
    encode_snapshot,
    is_cycle_input,
    load_cycle_input,
)
from scheduler.result import cycle_json
from scheduler.snapshot import advance
from tests.scheduler.golden_workloads import CONFIGS, build


def _decisions(result: object) -> dict[str, object]:
    data = result.to_json()  # type: ignore[attr-defined]
    data.pop("timings")
    return data


@pytest.mark.parametrize("seed", [1, 7, 23])
def test_encoding_round_trips_every_field(seed: int) -> None:
    snapshot = build(seed)
    decoded = decode_snapshot(json.loads(encode_snapshot(snapshot)))
    assert decoded == snapshot


@pytest.mark.parametrize(("seed", "config"), [(3, "default"), (11, "preempt-reclaim"), (19, "preempt-reclaim")])
def test_decoded_snapshot_decides_the_same(seed: int, config: str) -> None:
    snapshot = build(seed)
    for _ in range(2):
        original = run_cycle(snapshot, CONFIGS[config])
        replayed = run_cycle(decode_snapshot(json.loads(encode_snapshot(snapshot))), CONFIGS[config])
        assert _decisions(replayed) == _decisions(original)
        snapshot = advance(snapshot, original)


def test_encoder_reuses_unchanged_objects_and_encodes_changed_ones() -> None:
    snapshot = build(5)
    encoder = SnapshotEncoder()
    first = encoder.encode(snapshot)
    result = run_cycle(snapshot, CONFIGS["default"])
    following = advance(snapshot, result)
    assert encoder.encode(following) == encode_snapshot(following)
    assert first == encode_snapshot(snapshot)
    assert result.binds  # the workload changes between the two snapshots


def test_cli_replays_a_cycle_input_byte_identically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot, config = build(11), CONFIGS["preempt-reclaim"]
    recorded = cycle_json(run_cycle(snapshot, config))
    path = tmp_path / "cycle.json"
    path.write_text(cycle_input_text(encode_snapshot(snapshot), config, cycle=4, recorded=recorded))
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == json.dumps({"cycles": [recorded]}, indent=2, sort_keys=True) + "\n"


def test_cli_conf_shows_what_another_configuration_decides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = build(11)
    path = tmp_path / "cycle.json"
    path.write_text(cycle_input_text(encode_snapshot(snapshot), CONFIGS["default"]))
    other = tmp_path / "other.yaml"
    other.write_text('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n')
    assert main(["simulate", str(path)]) == 0
    default = json.loads(capsys.readouterr().out)["cycles"][0]
    assert main(["simulate", str(path), "--conf", str(other)]) == 0
    enqueue_only = json.loads(capsys.readouterr().out)["cycles"][0]
    assert default["binds"]
    assert enqueue_only["binds"] == {}
    assert enqueue_only == cycle_json(run_cycle(snapshot, parse_config(other.read_text())))


def test_bad_cycle_input_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = cycle_input_text('{"tasks":[{"uid":"u"}]}', CONFIGS["default"])
    assert is_cycle_input(text)
    with pytest.raises(CycleInputError, match=r"snapshot\.tasks\[0\]"):
        load_cycle_input(text)
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert main(["simulate", str(path)]) == 2
    assert "snapshot.tasks[0]" in capsys.readouterr().err
