"""The tdm plugin (time-division multiplexing): revocable nodes lent to preemptible work for a daily window.

Volcano's ``pkg/scheduler/plugins/tdm``. A node labelled ``volcano.sh/revocable-zone=<zone>`` is
*revocable*; the plugin's arguments ``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`` give each zone its daily
window (an end at or before the start ends the next day, so ``0:00-0:00`` is the whole day), and
``tdm.evict.period`` (a Go duration, default 1m) how often Volcano evicts.

* **predicate** (unresolvable): a revocable node passes only while its zone's window is open and only
  for a pod with a ``volcano.sh/revocable-zone`` annotation; other nodes pass.
* **node order**: 100 on an open revocable node for such a pod, else 0.
* **preemptable**: a preemptor that is preemptable or may use revocable zones preempts nothing (a
  veto); otherwise the candidates that are preemptable, Running and not on a revocable node, at most
  the victim job's budget per job (``volcano.sh/jdb-max-unavailable`` less the pods already
  unavailable, else Running less ``volcano.sh/jdb-min-available``, else 1; counts or percentages of
  the job's pods, rounded up).
* **victim tasks**: the preemptable Running pods on the nodes of every zone whose window is closed, by
  the same budget per job (what the ``shuffle`` action evicts).
* **job order**: non-preemptable jobs first; **job pipelined**: the job's own ``IsPipelined``;
  **job starving**: a non-preemptable job with pending pods.

The core reads no clock: the window is checked against ``Snapshot.now``, in UTC (Volcano uses the
scheduler's local time); without a clock every window counts as open. Volcano's evict period is a
process-wide timer across sessions; the core keeps nothing between cycles, so the argument is checked
and has no effect (every session may evict).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import (
    ArgSpec,
    JobOrder,
    JobPipelined,
    JobStarving,
    NodeOrder,
    Plugin,
    Predicate,
    Preemptable,
    VictimTasks,
)
from scheduler.model import TaskStatus
from scheduler.points import BoolArray, Filter, FloatArray, IntArray, Vote
from scheduler.quantity import parse_duration

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, TaskInfo

__all__ = ["TdmPlugin", "TdmState", "budget_evictions", "parse_revocable_zone"]

ZONE_LABEL = "volcano.sh/revocable-zone"
ZONE_PREFIX = "tdm.revocable-zone."
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_DAY = 86400


def parse_revocable_zone(raw: str, day_start: float) -> tuple[float, float]:
    """Volcano's ``parseRevocableZone``: the window ``HH:MM-HH:MM`` of the day starting at
    ``day_start`` (seconds), as (start, end); an end at or before the start is on the next day.
    Raises ValueError for another format (Go's ``15:04`` layout: minutes of two digits)."""
    parts = raw.strip().split("-")
    if len(parts) != 2:
        raise ValueError(f"revocable zone {raw} format error")
    times = []
    for part in parts:
        m = _CLOCK.match(part)
        if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59:
            raise ValueError(f'parsing time "{part}" as "15:04": cannot parse')
        times.append(int(m.group(1)) * 3600 + int(m.group(2)) * 60)
    start = day_start + times[0]
    end = day_start + times[1] + (_DAY if times[0] >= times[1] else 0)
    return start, end


def _int_or_percent(value: str, total: int) -> int:
    """Kubernetes' ``intstr`` with percentages rounded up (0 for a bad value, as Volcano logs it)."""
    text = value.strip()
    try:
        if text.endswith("%"):
            return math.ceil(int(text[:-1]) * total / 100)
        return int(text)
    except ValueError:
        return 0


def budget_evictions(job: JobInfo) -> int:
    """Volcano's ``getMaxPodEvictNum``: how many pods of ``job`` may be evicted now."""
    counts = job.counts
    running = counts[TaskStatus.RUNNING]
    total = len(job.tasks)
    if job.job.jdb_max_unavailable:
        most = _int_or_percent(job.job.jdb_max_unavailable, total)
        unavailable = total - counts[TaskStatus.SUCCEEDED] - counts[TaskStatus.FAILED] - running
        return 0 if unavailable >= most else most - unavailable
    if job.job.jdb_min_available:
        least = _int_or_percent(job.job.jdb_min_available, total)
        if running >= least:
            return running - least
    return 1


def _check_zone(value: Any) -> str | None:
    try:
        parse_revocable_zone(str(value), 0.0)
    except ValueError as exc:
        return str(exc)
    return None


def _check_period(value: Any) -> str | None:
    try:
        parse_duration(str(value))
    except ValueError as exc:
        return str(exc)
    return None


class TdmState(PluginState):
    """Tdm's cycle: whether each configured zone's window is open (``open``), each node's zone ("" for a node
    that is not revocable), which nodes are revocable and which usable (not revocable, or in an open zone),
    each node's reason to refuse any pod (an unknown or closed zone), and the predicate's filters by whether
    the pod may use revocable zones (filled lazily)."""

    def __init__(
        self,
        session: SessionHandle,
        is_open: dict[str, bool],
        zone_of: list[str],
        revocable: BoolArray,
        usable: BoolArray,
        zone_reasons: list[str],
    ) -> None:
        super().__init__(session)
        self.open = is_open
        self.zone_of = zone_of
        self.revocable = revocable
        self.usable = usable
        self.zone_reasons = zone_reasons
        self.filters: dict[bool, list[Filter]] = {}


class TdmPlugin(Plugin, Predicate, NodeOrder, Preemptable, VictimTasks, JobOrder, JobPipelined, JobStarving):
    """Revocable zones (see the module docstring)."""

    name = "tdm"
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "tdm.evict.period": ArgSpec(
            "str", "1m", "how often Volcano evicts (a Go duration); no effect here", check=_check_period
        ),
    }
    argument_prefixes: ClassVar[Mapping[str, ArgSpec]] = {ZONE_PREFIX: ArgSpec("str", "", check=_check_zone)}

    def open(self, session: SessionHandle) -> TdmState:
        """Which zones are open at the snapshot's clock, and each node's zone, usability and reason."""
        zones = {k[len(ZONE_PREFIX) :]: str(v) for k, v in self.args.items() if k.startswith(ZONE_PREFIX)}
        now = session.snapshot.now
        is_open: dict[str, bool] = {}
        for zone, raw in zones.items():
            if now is None:
                is_open[zone] = True
                continue
            start, end = parse_revocable_zone(raw, now - now % _DAY)
            is_open[zone] = start <= now <= end
        zone_of = [n.labels.get(ZONE_LABEL, "") for n in session.nodes.nodes]
        revocable = np.array([bool(z) for z in zone_of], dtype=np.bool_)
        usable = np.array([not z or is_open.get(z, False) for z in zone_of], dtype=np.bool_)
        reasons = ["" if not z else (f"revocable zone {z} not support" if z not in is_open else "") for z in zone_of]
        closed = [
            "" if not z or z not in is_open or is_open[z] else f"current time beyond revocable zone {z}:{zones[z]}"
            for z in zone_of
        ]
        zone_reasons = [a or b for a, b in zip(reasons, closed, strict=True)]
        return TdmState(session, is_open, zone_of, revocable, usable, zone_reasons)

    # -- placement -------------------------------------------------------------------------------

    def predicate(self, st: TdmState, task: TaskInfo) -> Sequence[Filter]:
        """Revocable nodes: their zone open, and the pod allowed on revocable zones."""
        allowed = bool(task.task.revocable_zone)
        cached = st.filters.get(allowed)
        if cached is None:
            if allowed:
                passed = st.usable.copy()
                reasons = st.zone_reasons
            else:
                passed = st.usable & ~st.revocable
                reasons = [
                    r or ("not allow to dispatch to revocable node" if st.revocable[i] else "")
                    for i, r in enumerate(st.zone_reasons)
                ]
            cached = st.filters[allowed] = [Filter(self.name, passed, "revocable node", True, reasons)]
        return cached

    def node_order(self, st: TdmState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """100 on an open revocable node for a pod allowed there."""
        if not task.task.revocable_zone:
            return np.zeros(len(nodes), dtype=np.float64)
        return np.where(st.revocable[nodes] & st.usable[nodes], 100.0, 0.0)

    # -- eviction --------------------------------------------------------------------------------

    def preemptable(self, st: TdmState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """Non-preemptable preemptors take preemptable Running pods off revocable nodes, by budget."""
        if preemptor.preemptable or preemptor.task.revocable_zone:
            return []
        by_job: dict[str, list[TaskInfo]] = {}
        for t in candidates:
            if not t.preemptable or t.status != TaskStatus.RUNNING or t.node < 0 or st.revocable[t.node]:
                continue
            by_job.setdefault(t.job.key, []).append(t)
        return self._by_budget(st, by_job)

    def _by_budget(self, st: TdmState, by_job: dict[str, list[TaskInfo]]) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for key in sorted(by_job):
            job = st.session.jobs.get(key)
            if job is not None:
                out.extend(by_job[key][: min(budget_evictions(job), len(by_job[key]))])
        return out

    def victim_tasks(self, st: TdmState, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The preemptable Running pods on the nodes of closed zones, by budget per job."""
        table = st.session.nodes
        out: list[TaskInfo] = []
        for zone in sorted(z for z, is_open in st.open.items() if not is_open):
            by_job: dict[str, list[TaskInfo]] = {}
            for i, z in enumerate(st.zone_of):
                if z != zone:
                    continue
                for t in sorted(table.tasks[i].values(), key=lambda t: t.uid):
                    if t.preemptable and t.status == TaskStatus.RUNNING:
                        by_job.setdefault(t.job.key, []).append(t)
            out.extend(self._by_budget(st, by_job))
        return out

    # -- jobs ------------------------------------------------------------------------------------

    def job_order(self, st: TdmState, a: JobInfo, b: JobInfo) -> int:
        """Non-preemptable jobs first."""
        if a.preemptable == b.preemptable:
            return 0
        return -1 if not a.preemptable else 1

    def job_pipelined(self, st: TdmState, job: JobInfo) -> Vote:
        """The job's own pipelined test (Volcano's ``IsPipelined``)."""
        waiting = job.counts[TaskStatus.PIPELINED]
        return Vote.PERMIT if waiting + job.ready_num + job.be_pending >= job.min_available else Vote.REJECT

    def job_starving(self, st: TdmState, job: JobInfo) -> bool:
        """A non-preemptable job with pending pods."""
        return not job.preemptable and job.counts[TaskStatus.PENDING] > 0
