"""A simulation child that never answers (``simcycle.run_isolated``'s ``target`` seam); imports no Django."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any


def never_answers(conn: Connection, payload: tuple[Any, ...], cpu_seconds: int) -> None:
    del payload, cpu_seconds
    while True:
        time.sleep(3600)
        conn.send(("never",))
