"""SessionCache: keep a session's opened state between cycles (an optional speed-up).

``run_cycle(snapshot, config, cache=cache)`` gives exactly the result of
``run_cycle(snapshot, config)``; the cache only saves work. It holds the state of the last
session as it was right after ``_open_state`` (tasks, jobs, queues, the node table). When the next
snapshot has the *same objects* (checked by identity, which snapshots built with
``dataclasses.replace`` / :func:`scheduler.advance` share structurally) and an equal config and
registry, that state is reused instead of rebuilt: only the plugins are opened again (new
states of the same plugins: a plugin keeps nothing of a cycle). Otherwise the session is opened
from scratch, with the plugins of the last one when its config and registry were equal, and
becomes the cached one.

Reuse is made safe by a journal: every state change of a session opened with a cache goes
through ``Session.place/unplace/evict/unevict/dispatch`` (tasks, their jobs' counters, node
task lists) or touches job fields that are reset for every job after the cycle (phase, reason,
fit errors); node-table columns are restored from copies taken at open. After ``close`` the
journal rolls the state back, so the cached state is again exactly the opened state.

A cache is not thread-safe; use one per scheduling loop. A cycle that raises drops the cached
state.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.gc_pause import GcPause
from scheduler.journal import Journal

if TYPE_CHECKING:
    from scheduler.config_types import SchedulerConfig
    from scheduler.registry import Registry
    from scheduler.session import Session
    from scheduler.snapshot import Snapshot

__all__ = ["SessionCache"]

#: A journal always records at least this many pods (small cycles are always kept).
_MIN_JOURNAL = 1000
#: Fields that must hold the same objects for the opened state to be reused at all.
_STATIC_FIELDS = ("nodes", "queues", "priority_classes", "hyper_nodes")
_ARRAYS = ("used", "releasing", "pipelined", "idle", "future", "pod_count", "nz_requested")


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


class SessionCache:
    """Carries a session's opened state from one cycle to the next (see the module doc)."""

    __slots__ = ("_arrays", "_key", "_session", "hits", "misses", "update_limit", "updates")

    def __init__(self, update_limit: float = 0.7) -> None:
        #: The opened state is updated while the pods added and removed (and the PodGroups) number
        #: at most this fraction of the snapshot's; above, opening afresh is cheaper.
        self.update_limit = update_limit
        self._session: Session | None = None
        self._key: tuple[Any, ...] = ()
        self._arrays: dict[str, Any] = {}
        #: Number of cycles that reused the opened state as it was / updated it for the PodGroups
        #: that changed / opened a session from scratch.
        self.hits = 0
        self.updates = 0
        self.misses = 0

    def clear(self) -> None:
        """Forget the cached state."""
        self._session = None
        self._key = ()
        self._arrays = {}

    def _same_setup(self, config: SchedulerConfig, registry: Registry) -> bool:
        """Whether a session is cached and was opened with an equal config and registry."""
        if self._session is None:
            return False
        _, cfg, reg = self._key
        return (cfg is config or cfg == config) and (reg is registry or reg == registry)

    def _reusable(self, snapshot: Snapshot) -> str:
        """For a cached session of the same setup: ``"same"`` (every object the same), ``"jobs"`` (only
        PodGroups and pods changed) or ``""``."""
        old = self._key[0]
        if not all(_same(getattr(old, f), getattr(snapshot, f)) for f in _STATIC_FIELDS):
            return ""
        return "same" if _same(old.jobs, snapshot.jobs) and _same(old.tasks, snapshot.tasks) else "jobs"

    def open(self, snapshot: Snapshot, config: SchedulerConfig, registry: Registry) -> Session:
        """Return a session over ``snapshot``: the cached one reset to its opened state when the
        inputs are the same objects, updated for the PodGroups that changed when only those
        changed, else a freshly opened one (which is then cached)."""
        from scheduler.session import Session
        from scheduler.session_reuse import update_state

        session = self._session
        same_setup = self._same_setup(config, registry)
        how = self._reusable(snapshot) if same_setup else ""
        if session is not None and how:
            table = session.nodes
            for name, saved in self._arrays.items():
                np.copyto(getattr(table, name), saved)
            table.changes = []
            if how == "same":
                self.hits += 1
                session.reopen(snapshot)
                return self._journal_limit(session)
            if update_state(session, snapshot, self.update_limit):
                self.updates += 1
                self._key = (snapshot, config, registry)
                self._arrays = {name: getattr(table, name).copy() for name in _ARRAYS}
                session.reopen(snapshot)
                return self._journal_limit(session)
        self.misses += 1
        # A plugin keeps nothing of a cycle: every session of this loop uses the same ones.
        plugins = session.plugins if session is not None and same_setup else None
        self.clear()
        session = Session(snapshot, config, registry, journal=Journal(), plugins=plugins)
        self._session = session
        self._key = (snapshot, config, registry)
        table = session.nodes
        self._arrays = {name: getattr(table, name).copy() for name in _ARRAYS}
        return self._journal_limit(session)

    def _journal_limit(self, session: Session) -> Session:
        # A cycle that changes more than this many pods is followed by a snapshot with at least
        # twice as many pods added and removed (each changed pod object is one of each), beyond
        # ``update_limit``: its session is dropped rather than journaled and rolled back.
        if session.journal is not None:
            limit = min(self.update_limit * len(session.snapshot.tasks) / 2, float(1 << 62))
            session.journal.limit = max(_MIN_JOURNAL, int(limit))
        return session

    def prime(
        self, snapshot: Snapshot, config: SchedulerConfig | None = None, registry: Registry | None = None
    ) -> None:
        """Open the state of ``snapshot`` now (as a cycle would, without running any action), so
        that the next cycles over it, or over snapshots sharing most of its objects, only update
        it. E.g. a scheduler primes its cache with the cluster when it starts."""
        from scheduler.config import DEFAULT_CONFIG
        from scheduler.registry import default_registry

        with GcPause():
            try:
                session = self.open(
                    snapshot,
                    config if config is not None else DEFAULT_CONFIG,
                    registry if registry is not None else default_registry(),
                )
                self.release(session)
            except BaseException:
                self.clear()
                raise

    def release(self, session: Session) -> None:
        """Roll ``session`` back to its opened state after its cycle (called by run_cycle), or
        drop it when its journal was abandoned."""
        journal = session.journal
        if journal is None:
            return
        if journal.abandoned:
            self.clear()
        else:
            journal.rollback(session.nodes, session.jobs.values())
