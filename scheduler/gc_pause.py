"""Pausing Python's cyclic garbage collector while a scheduling cycle runs."""

from __future__ import annotations

import gc

__all__ = ["GcPause"]


class GcPause:
    """Pause the cyclic garbage collector for the ``with`` block, and enable it again at the end
    of the block (also when it raises) if this call was the one that paused it.

    A session allocates many long-lived objects and frees them all at the end: the collector
    would walk them (and the snapshot) again and again for nothing. No result depends on it.

    A class rather than a ``@contextmanager`` generator: its exit allocates nothing after the
    collector is on again, so the collection the pause deferred runs at the caller's next
    allocation, after the cycle, as when this was written inline in ``run_cycle`` (the
    generator's ``StopIteration`` triggered it inside the cycle, ~20 ms a cycle in the
    benchmark's W8b at size M).
    """

    # The collector's switch is one per process: while the block runs, every thread sees it off
    # (in the product: the other loops of the embedded web process, the other tasks of a threaded
    # Celery worker). Nothing is lost: garbage made meanwhile is collected after the block.
    #
    # Thread safety: gc.isenabled(), gc.disable() and gc.enable() are each atomic (C functions
    # run under the interpreter lock), and each call undoes only what it did itself. A call that
    # finds the collector off (paused by a cycle running in another thread, or by the caller)
    # leaves it alone at the end; the call that turned it off turns it on at its end, even while
    # cycles of other threads still run (they go on with the collector on: slower, same result);
    # two calls that both find it on both turn it off and both turn it on. So however the cycles
    # of several threads overlap, none can leave the collector off once every cycle that found it
    # on has ended, and a caller that keeps it off around its cycles keeps it off.

    __slots__ = ("_paused",)

    def __init__(self) -> None:
        self._paused = False

    def __enter__(self) -> None:
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._paused:
            gc.enable()
