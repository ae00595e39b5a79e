"""The garbage collector of the long-running server processes (ADR 0034).

A live process keeps the change log's recent entries in its tailer's rings (tens of thousands of changes, their
rows and messages): objects that live long and are never cyclic garbage. CPython's full collection walks every
tracked object; with the default thresholds it ran every few seconds under load, each run taking 0.6 to 2 s and
collecting nothing, and every socket of the process waited for it (`docs/performance/2026-12-07-socket-lag.md`).
The server processes therefore move what start-up made into the permanent generation (``gc.freeze``) and run a
full collection after ``GC_GEN2_THRESHOLD`` collections of the middle generation instead of Python's 10. The young
generations keep Python's thresholds: their collections stay short.
"""

from __future__ import annotations

import gc


def tune_for_serving(gen2_threshold: int) -> bool:
    """Freeze what exists now and make full collections rarer; ``0`` leaves Python's settings. True if tuned."""
    if gen2_threshold <= 0:
        return False
    gen0, gen1, _ = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(gen0, gen1, gen2_threshold)
    return True
