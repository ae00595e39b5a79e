"""The controllers' informer of the running test, as the periodic worker (or the embedded process) runs one.

Product writes ask no controller for anything: the controllers read the change log (``runtime.informer``). A
test that drives the system by hand (a cycle, the cluster mirror, an API call) and expects the controllers to
have reacted calls :func:`react` where the real process's informer thread would have read the log. The
informer starts at the log's revision when the test starts (``tests/volcanoweb/conftest.py``).
"""

from __future__ import annotations

from volcanoweb.feed import log
from volcanoweb.runtime.informer import Informer, Reactions

_informer: Informer | None = None


def start() -> None:
    """A fresh informer from the log's current revision (the test's start)."""
    global _informer
    _informer = Informer(cursor=log.head()[0])


def stop() -> None:
    global _informer
    _informer = None


def react() -> Reactions:
    """Read what was written since the last call and run what the controllers are asked for (Celery is eager)."""
    if _informer is None:
        start()
    assert _informer is not None
    return _informer.step()
