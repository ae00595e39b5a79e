"""What the cycle input file's writer and reader share: its apiVersion and kind, the canonical JSON
it is written in, the model objects at their defaults (a field equal to its default is left out) and the
error a malformed file raises."""

from __future__ import annotations

import json
from typing import Any

from scheduler.model import Job, Queue, Task

API_VERSION = "volcanoweb.io/v1"
KIND = "CycleInput"
DEFAULT_TASK = Task(uid="", name="")
DEFAULT_JOB = Job(uid="", name="")
DEFAULT_QUEUE = Queue(name="")


class CycleInputError(ValueError):
    """A cycle input file is malformed; ``field`` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message


def dumps(data: Any) -> str:
    """The canonical JSON text of ``data`` (sorted keys, no spaces): the same data always writes the same."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))
