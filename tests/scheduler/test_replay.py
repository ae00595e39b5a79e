"""Cycle input files: lossless snapshot encoding and offline replay by ``python -m scheduler simulate``."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import json
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scheduler import parse_config, run_cycle
from scheduler.cli import main
from scheduler.model import Job, PodAffinityTerm, Task, TopologySpreadConstraint
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
from scheduler.snapshot import Snapshot, advance
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


def test_encoded_parts_put_the_clock_between_the_same_text() -> None:
    encoder = SnapshotEncoder()
    snapshot = dataclasses.replace(build(5), now=1764662400.25)
    before, clock, after = encoder.encode_parts(snapshot)
    assert before + clock + after == encode_snapshot(snapshot)
    assert clock == ',"now":1764662400.25'
    later = dataclasses.replace(snapshot, now=1764662405.5)
    assert encoder.encode_parts(later) == (before, ',"now":1764662405.5', after)  # only the clock differs
    assert encoder.encode_parts(dataclasses.replace(snapshot, now=None)) == (before, "", after)
    assert json.loads(before + clock + after)["now"] == 1764662400.25


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


# --------------------------------------------------------------------------- every field, generically


def _model_classes() -> set[type]:
    import scheduler.model as model
    import scheduler.policies as policies

    return {
        c
        for module in (model, policies)
        for c in vars(module).values()
        if isinstance(c, type) and dataclasses.is_dataclass(c)
    }


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _sample(tp: Any, name: str, default: Any, seen: set[type]) -> Any:
    """Return a value of type ``tp`` that differs from ``default`` (nested dataclasses: every field set)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        assert len(inner) == 1, f"{name}: unsupported union {tp}"
        return _sample(inner[0], name, default, seen)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return (_sample(args[0], name, None, seen), _sample(args[0], name + "2", None, seen))
        return tuple(_sample(a, f"{name}{i}", None, seen) for i, a in enumerate(args))
    if origin is frozenset:
        return frozenset({_sample(args[0], name, None, seen), _sample(args[0], name + "2", None, seen)})
    if origin in (Mapping, collections.abc.Mapping, dict):
        _key_type, value_type = args
        return {f"{name}-k": _sample(value_type, name, None, seen)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return next(m for m in tp if m != default)
    if tp is bool:
        return not default if isinstance(default, bool) else True
    if tp is int:
        return 7 if default != 7 else 8
    if tp is float:
        return 1_700_000_123.25 if default != 1_700_000_123.25 else 3.5
    if tp is str:
        value = f"v-{name}"
        return value if value != default else value + "x"
    if dataclasses.is_dataclass(tp):
        return _full(tp, seen)
    raise AssertionError(f"{name}: no sample for type {tp!r}; teach this test the type")


def _full(cls: type, seen: set[type]) -> Any:
    """Return an instance of dataclass ``cls`` with every field at a non-default value."""
    seen.add(cls)
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    values = {}
    for f in dataclasses.fields(cls):
        default = _field_default(f)
        value = _sample(hints[f.name], f"{cls.__name__}.{f.name}", default, seen)
        assert value != default, f"{cls.__name__}.{f.name}: the sample equals the default"
        values[f.name] = value
    return cls(**values)


def _differences(a: Any, b: Any, where: str) -> list[str]:
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return [f"{where}: {type(a).__name__} became {type(b).__name__}"]
        out: list[str] = []
        for f in dataclasses.fields(a):
            out += _differences(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
        return out
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{i}]")]
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return [] if dict(a) == dict(b) else [f"{where}: {dict(a)!r} became {dict(b)!r}"]
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} became {b!r}"]


def test_every_field_of_every_model_object_round_trips() -> None:
    seen: set[type] = set()
    snapshot = _full(Snapshot, seen)
    # Every dataclass of the model is reachable from the snapshot, so each one is exercised here.
    assert _model_classes() <= seen, f"not reached from Snapshot: {_model_classes() - seen}"
    decoded = decode_snapshot(json.loads(encode_snapshot(snapshot)))
    assert _differences(snapshot, decoded, "snapshot") == []
    assert encode_snapshot(decoded) == encode_snapshot(snapshot)


@pytest.mark.parametrize("selector", [None, ()])
def test_nil_and_empty_selectors_stay_distinct(selector: Any) -> None:
    term = PodAffinityTerm("kubernetes.io/hostname", selector)
    spread = TopologySpreadConstraint(1, "zone", match_labels=selector)
    task = Task("u", "p", anti_affinity=(term,), topology_spread=(spread,))
    decoded = decode_snapshot(json.loads(encode_snapshot(Snapshot.of(tasks=[task]))))
    assert decoded.tasks[0].anti_affinity[0].match_labels == selector
    assert decoded.tasks[0].topology_spread[0].match_labels == selector


def test_snapshot_without_clock_or_quotas_encodes_as_before() -> None:
    text = encode_snapshot(Snapshot.of(jobs=[Job("u", "j")]))
    assert json.loads(text) == {
        "jobs": [{"uid": "u", "name": "j"}],
        "nodes": [],
        "priority_classes": [],
        "queues": [],
        "tasks": [],
    }
    assert decode_snapshot(json.loads(text)).now is None


def test_bad_clock_names_the_field() -> None:
    with pytest.raises(CycleInputError) as info:
        decode_snapshot({"now": "yesterday"})
    assert info.value.field == "snapshot.now"
    with pytest.raises(CycleInputError) as info:
        decode_snapshot({"jobs": [{"uid": "u", "name": "j", "created_at": "x"}]})
    assert info.value.field == "snapshot.jobs[0].created_at"
