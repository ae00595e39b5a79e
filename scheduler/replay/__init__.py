"""Cycle input files: a snapshot and a configuration as one JSON document, replayable offline.

A *cycle input* is everything :func:`scheduler.run_cycle` needs, written losslessly::

    {"apiVersion": "volcanoweb.io/v1", "kind": "CycleInput", "cycle": 42,
     "config": "<Volcano scheduler YAML>", "snapshot": {"nodes": [...], "queues": [...], ...},
     "recorded": {<the cycle's decisions, the simulator's compact shape>}}

Unlike the manifest form (``scheduler.decode``), every field of every model object and of the
snapshot is kept (resolved priorities, creation order, uids, nominated nodes, pod labels,
anti-affinity and spread constraints, PodGroup creation times and SLA waiting times, the cycle's
clock ``now``, namespace ResourceQuotas), so replaying the file decides exactly what the recorded
cycle decided (``tests/scheduler/test_replay.py`` fails when a model field is not round-tripped).
Fields equal to their default are left out to keep files small.

:class:`SnapshotEncoder` keeps the encoded form of each object between calls: a caller that passes
snapshots sharing unchanged objects (the web app's snapshot memo) only encodes what changed.

The package has the writer (``encoding``), the reader (``decoding``), what they share (``format``) and
the file around the snapshot (``cycle_input``); the names below are its public face.
"""

from __future__ import annotations

from scheduler.replay.cycle_input import cycle_input_text, is_cycle_input, load_cycle_input
from scheduler.replay.decoding import decode_snapshot
from scheduler.replay.encoding import SnapshotEncoder, encode_clock, encode_snapshot
from scheduler.replay.format import API_VERSION, KIND, CycleInputError

__all__ = [
    "API_VERSION",
    "KIND",
    "CycleInputError",
    "SnapshotEncoder",
    "cycle_input_text",
    "decode_snapshot",
    "encode_clock",
    "encode_snapshot",
    "is_cycle_input",
    "load_cycle_input",
]
