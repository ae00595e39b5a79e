"""In-process background loops for the embedded mode.

In the stack mode Celery beat triggers the periodic work (settings.PERIODIC_TASKS)
in a worker. In the embedded mode there is no broker, so each entry runs in a
daemon thread of the web process, calling the very same Celery task in-process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.db import close_old_connections

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loop:
    """A named function to call every `period` seconds."""

    name: str
    period: float
    func: Callable[[], object]


def periodic_loops() -> list[Loop]:
    """Return one loop per entry of settings.PERIODIC_TASKS, calling its Celery task in-process."""
    from django.conf import settings

    from volcanoweb.celery import app

    app.loader.import_default_modules()  # make sure every app's tasks are registered
    return [Loop(name, period, app.tasks[task]) for name, task, period in settings.PERIODIC_TASKS]


class LoopRunner:
    """Run every registered loop in its own daemon thread until stopped."""

    def __init__(self, loops: list[Loop] | None = None) -> None:
        self.loops = periodic_loops() if loops is None else loops
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for loop in self.loops:
            thread = threading.Thread(target=self._run, args=(loop,), name=f"loop-{loop.name}", daemon=True)
            thread.start()
            self.threads.append(thread)
            log.info("started in-process loop %s every %.2fs", loop.name, loop.period)

    def _run(self, loop: Loop) -> None:
        while not self.stop_event.is_set():
            try:
                loop.func()
            except Exception:  # a failing iteration is logged; the loop keeps going
                log.exception("in-process loop %s failed", loop.name)
            finally:
                close_old_connections()
            self.stop_event.wait(loop.period)

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout)
