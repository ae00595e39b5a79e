"""The extender plugin: Volcano's HTTP scheduler extender.

Volcano's ``pkg/scheduler/plugins/extender``. Each configured verb is a POST of a JSON body to
``<extender.urlPrefix>/<verb>`` with ``extender.httpTimeout`` (a Go duration, default 1s); an answer
other than 200, a body over 10 MiB or one that is not JSON is an error. ``extender.ignorable`` (false)
decides what an error means, per hook, as in Volcano:

=========================  =================================  ==================  ==================
verb argument              hook (body → answer)               error, ignorable    error, not ignorable
=========================  =================================  ==================  ==================
``onSessionOpenVerb``      session open                       hooks still run     no hook this session
``predicateVerb``          ``{task, node}`` → ``{status,      pass                fails (resolvable)
                           code}``, per node
``prioritizeVerb``         ``{task, nodes}`` →                scores 0            scores 0
                           ``{nodeScore, errorMessage}``
``preemptableVerb`` /      ``{evictor, evictees}`` →          no victims          no victims
``reclaimableVerb``        ``{status, victims}``
``jobEnqueueableVerb``     ``{job}`` → ``{status}``           permit              reject
``jobEnqueuedVerb``        ``{job}``                          -                   -
``queueOverusedVerb``      ``{queue}`` → ``{overused}``       not overused        overused
``jobReadyVerb``           ``{job}`` → ``{status}``           ready               not ready
``allocateFuncVerb`` /     ``{task}`` on allocate /           -                   -
``deallocateFuncVerb``     deallocate
``onSessionCloseVerb``     session close                      -                   -
=========================  =================================  ==================  ==================

A predicate answer with an empty ``status`` passes; otherwise ``code`` is Volcano's status code (0 counts
as 1, Error): 3 (UnschedulableAndUnresolvable) is unresolvable, any other resolvable, and ``status`` is the
node's reason. Votes (``status``) are Volcano's: 1 permit, 0 abstain, -1 reject; an abstaining victim
answer abstains. Victims are matched to the candidates by ``uid`` (or Go's ``UID``).
``extender.managedResources`` (a list of resource names): only pods requesting one of them are sent to the
task hooks (predicate, prioritize, preemptable, reclaimable, allocate, deallocate); the others pass,
score 0 and abstain.

The core does no I/O: the HTTP client is a *transport* given to the plugin class
(:func:`with_transport`); the product's is ``volcanoweb.scheduling.extender`` (httpx). Without one (the
default registry) every call fails as an unreachable extender would. Bodies are this project's JSON
shapes (below), not Go's serialised ``TaskInfo``/``NodeInfo`` structs. Differences: a prioritize error
scores 0 (Volcano drops every plugin's scores for that pod); an allocate/deallocate answer's
``errorMessage`` does not undo the placement (the core's event handlers cannot fail).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.cycle_state import PluginState
from scheduler.framework import (
    AllocateHandler,
    ArgSpec,
    JobEnqueueable,
    JobEnqueued,
    JobReady,
    NodeOrder,
    Overused,
    Plugin,
    Predicate,
    Preemptable,
    Reclaimable,
    SessionClose,
)
from scheduler.points import Filter, FloatArray, IntArray, Vote
from scheduler.quantity import duration_problem, parse_duration

if TYPE_CHECKING:
    from scheduler.handle import SessionHandle
    from scheduler.info import JobInfo, QueueInfo, TaskInfo

__all__ = ["MAX_BODY", "ExtenderError", "ExtenderPlugin", "ExtenderState", "Transport", "with_transport"]

#: Volcano's ``maxBodySize``: answers longer than this are errors.
MAX_BODY = 10 << 20
VERBS = (
    "onSessionOpenVerb",
    "onSessionCloseVerb",
    "predicateVerb",
    "prioritizeVerb",
    "preemptableVerb",
    "reclaimableVerb",
    "queueOverusedVerb",
    "jobEnqueueableVerb",
    "jobEnqueuedVerb",
    "jobReadyVerb",
    "allocateFuncVerb",
    "deallocateFuncVerb",
)


class ExtenderError(Exception):
    """A failed extender call (unreachable, timed out, not 200, too large, not JSON)."""


#: ``transport(url, body, timeout_seconds) -> decoded JSON answer``; raises :class:`ExtenderError`.
Transport = Callable[[str, Mapping[str, Any], float], Any]


def _no_transport(url: str, body: Mapping[str, Any], timeout: float) -> Any:
    raise ExtenderError(f"no HTTP transport for the extender (POST {url})")


def _check_resources(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "expected a list of resource names"
    return None


def task_body(t: TaskInfo, dims: Sequence[str]) -> dict[str, Any]:
    """A pod as sent to the extender."""
    return {
        "uid": t.uid,
        "name": t.task.name,
        "namespace": t.namespace,
        "job": t.job.key,
        "status": str(t.status),
        "priority": t.priority,
        "requests": {d: int(v) for d, v in zip(dims, t.req, strict=True) if v},
        "labels": dict(t.task.labels),
        "nodeName": "",
    }


class ExtenderState(PluginState):
    """The extender's cycle: its arguments as read (base URL, timeout, ``ignorable``, each verb's path, the
    managed resources) and whether its hooks run this session (off after a failed session open that is not
    ignorable)."""

    def __init__(self, session: SessionHandle, args: Mapping[str, Any]) -> None:
        super().__init__(session)
        self.url = str(args["extender.urlPrefix"]).rstrip("/")
        self.timeout = parse_duration(str(args["extender.httpTimeout"] or "1s"))
        self.ignorable = bool(args["extender.ignorable"])
        self.verbs = {v: str(args[f"extender.{v}"] or "") for v in VERBS}
        self.managed = frozenset(args.get("extender.managedResources") or ())
        self.active = True


class ExtenderPlugin(
    Plugin,
    Predicate,
    NodeOrder,
    Preemptable,
    Reclaimable,
    JobEnqueueable,
    JobEnqueued,
    Overused,
    JobReady,
    AllocateHandler,
    SessionClose,
):
    """Volcano's HTTP extender (see the module docstring)."""

    name = "extender"
    transport: ClassVar[Transport] = staticmethod(_no_transport)
    arguments: ClassVar[Mapping[str, ArgSpec]] = {
        "extender.urlPrefix": ArgSpec("str", "", "the extender's base URL"),
        "extender.httpTimeout": ArgSpec("str", "1s", "timeout of each call (a Go duration)", check=duration_problem),
        "extender.ignorable": ArgSpec("bool", False, "whether failed calls are ignored (see the table)"),
        "extender.managedResources": ArgSpec(
            "any", None, "resources whose pods the task hooks see (all: unset)", check=_check_resources
        ),
        **{f"extender.{v}": ArgSpec("str", "", f"the {v[:-4]} hook's path") for v in VERBS},
    }

    # -- calls -----------------------------------------------------------------------------------

    def _send(self, st: ExtenderState, verb: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to the verb's path; the decoded answer (raises ExtenderError)."""
        return type(self).transport(f"{st.url}/{st.verbs[verb]}", body, st.timeout)

    def _on(self, st: ExtenderState, verb: str) -> bool:
        return st.active and bool(st.verbs[verb])

    def interested(self, st: ExtenderState, task: TaskInfo) -> bool:
        """Volcano's ``IsInterested``: every pod when no resource is managed, else a pod requesting one."""
        if not st.managed:
            return True
        dims = st.session.dims
        return any(v > 0 and dims[d] in st.managed for d, v in enumerate(task.req))

    def _task(self, st: ExtenderState, t: TaskInfo) -> dict[str, Any]:
        body = task_body(t, st.session.dims)
        body["nodeName"] = st.session.nodes.names[t.node] if t.node >= 0 else ""
        return body

    def _node(self, st: ExtenderState, i: int) -> dict[str, Any]:
        table, dims = st.session.nodes, st.session.dims
        node = table.nodes[i]
        return {
            "name": node.name,
            "labels": dict(node.labels),
            "allocatable": {d: int(table.alloc[k, i]) for k, d in enumerate(dims)},
            "idle": {d: int(table.idle[k, i]) for k, d in enumerate(dims)},
        }

    def _job(self, job: JobInfo) -> dict[str, Any]:
        return {"uid": job.job.uid, "name": job.job.name, "namespace": job.job.namespace, "queue": job.job.queue}

    # -- session ---------------------------------------------------------------------------------

    def open(self, session: SessionHandle) -> ExtenderState:
        """The arguments as read; calls the session-open verb (if any), whose failure turns the hooks off
        unless ``ignorable``."""
        st = ExtenderState(session, self.args)
        if not st.verbs["onSessionOpenVerb"]:
            return st
        body = {
            "jobs": [self._job(j) for j in session.jobs.values()],
            "nodes": [self._node(st, i) for i in range(len(session.nodes))],
            "queues": sorted(session.queues),
        }
        try:
            self._send(st, "onSessionOpenVerb", body)
        except ExtenderError:
            st.active = st.ignorable
        return st

    def on_session_close(self, st: ExtenderState, session: SessionHandle) -> None:
        if self._on(st, "onSessionCloseVerb"):
            with contextlib.suppress(ExtenderError):
                self._send(st, "onSessionCloseVerb", {})

    # -- placement -------------------------------------------------------------------------------

    def predicate(self, st: ExtenderState, task: TaskInfo) -> Sequence[Filter]:
        """One call per node; see the module docstring."""
        if not self._on(st, "predicateVerb") or not self.interested(st, task):
            return ()
        n = len(st.session.nodes)
        passed = np.ones(n, dtype=np.bool_)
        reasons = [""] * n
        hard = np.zeros(n, dtype=np.bool_)
        body_task = self._task(st, task)
        for i in range(n):
            try:
                answer = self._send(st, "predicateVerb", {"task": body_task, "node": self._node(st, i)})
            except ExtenderError as exc:
                if not st.ignorable:
                    passed[i], reasons[i] = False, str(exc)
                continue
            message = str(answer.get("status") or "") if isinstance(answer, Mapping) else ""
            if message:
                passed[i], reasons[i] = False, message
                hard[i] = answer.get("code") == 3
        return [
            Filter(self.name, passed | hard, "extender predicate failed", False, reasons),
            Filter(self.name, ~hard, "extender predicate failed", True, reasons),
        ]

    def node_order(self, st: ExtenderState, task: TaskInfo, nodes: IntArray) -> FloatArray:
        """The extender's ``nodeScore`` per node name (0 on any error)."""
        out = np.zeros(len(nodes), dtype=np.float64)
        if not self._on(st, "prioritizeVerb") or not self.interested(st, task):
            return out
        body = {"task": self._task(st, task), "nodes": [self._node(st, int(i)) for i in nodes]}
        try:
            answer = self._send(st, "prioritizeVerb", body)
        except ExtenderError:
            return out
        scores = answer.get("nodeScore") if isinstance(answer, Mapping) else None
        if not isinstance(scores, Mapping) or answer.get("errorMessage"):
            return out
        names = st.session.nodes.names
        for k, i in enumerate(nodes):
            value = scores.get(names[int(i)], 0)
            out[k] = float(value) if isinstance(value, int | float) else 0.0
        return out

    # -- eviction --------------------------------------------------------------------------------

    def _victims(
        self, st: ExtenderState, verb: str, actor: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo] | None:
        if not self._on(st, verb) or not self.interested(st, actor):
            return None
        body = {"evictor": self._task(st, actor), "evictees": [self._task(st, t) for t in candidates]}
        try:
            answer = self._send(st, verb, body)
        except ExtenderError:
            return []
        if not isinstance(answer, Mapping) or answer.get("status", 0) == 0:
            return None
        if answer.get("status") != 1:
            return []
        named = [v for v in answer.get("victims") or () if isinstance(v, Mapping)]
        chosen = {str(v.get("uid") or v.get("UID") or "") for v in named}
        return [t for t in candidates if t.uid in chosen]

    def preemptable(self, st: ExtenderState, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """The victims the extender names (see the module docstring)."""
        return self._victims(st, "preemptableVerb", preemptor, candidates)

    def reclaimable(self, st: ExtenderState, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        """The victims the extender names (see the module docstring)."""
        return self._victims(st, "reclaimableVerb", reclaimer, candidates)

    # -- jobs and queues -------------------------------------------------------------------------

    def job_enqueueable(self, st: ExtenderState, job: JobInfo) -> Vote:
        """The extender's vote (abstain when the verb is not configured)."""
        if not self._on(st, "jobEnqueueableVerb"):
            return Vote.ABSTAIN
        try:
            answer = self._send(st, "jobEnqueueableVerb", {"job": self._job(job)})
        except ExtenderError:
            return Vote.PERMIT if st.ignorable else Vote.REJECT
        status = answer.get("status") if isinstance(answer, Mapping) else None
        return Vote(status) if status in (-1, 0, 1) else Vote.ABSTAIN

    def job_enqueued(self, st: ExtenderState, job: JobInfo) -> None:
        if self._on(st, "jobEnqueuedVerb"):
            with contextlib.suppress(ExtenderError):
                self._send(st, "jobEnqueuedVerb", {"job": self._job(job)})

    def overused(self, st: ExtenderState, queue: QueueInfo) -> bool:
        """The extender's ``overused`` (false when the verb is not configured)."""
        if not self._on(st, "queueOverusedVerb"):
            return False
        try:
            answer = self._send(st, "queueOverusedVerb", {"queue": {"name": queue.name}})
        except ExtenderError:
            return not st.ignorable
        return bool(isinstance(answer, Mapping) and answer.get("overused"))

    def job_ready(self, st: ExtenderState, job: JobInfo) -> bool:
        """The extender's ``status`` (true when the verb is not configured)."""
        if not self._on(st, "jobReadyVerb"):
            return True
        try:
            answer = self._send(st, "jobReadyVerb", {"job": self._job(job)})
        except ExtenderError:
            return not st.ignorable
        return bool(isinstance(answer, Mapping) and answer.get("status"))

    # -- events ----------------------------------------------------------------------------------

    def _event(self, st: ExtenderState, verb: str, task: TaskInfo) -> None:
        if self._on(st, verb) and self.interested(st, task):
            with contextlib.suppress(ExtenderError):
                self._send(st, verb, {"task": self._task(st, task)})

    def on_allocate(self, st: ExtenderState, task: TaskInfo) -> None:
        self._event(st, "allocateFuncVerb", task)

    def on_deallocate(self, st: ExtenderState, task: TaskInfo) -> None:
        self._event(st, "deallocateFuncVerb", task)


def with_transport(transport: Transport) -> type[ExtenderPlugin]:
    """The extender plugin class calling out through ``transport`` (register it in place of the default)."""
    return type("ExtenderPlugin", (ExtenderPlugin,), {"transport": staticmethod(transport)})
