"""The binding cycle's costs that grow with the pods it binds (issue 17, "Issue 17: the binding cycle").

* The bind step and the simulated cluster's ``bind_many`` send their id and name lists as one
  parameter (``= ANY(…)`` on PostgreSQL, ``json_each`` on SQLite), not as an ``IN`` list of one
  parameter per row.
* After a cycle the loop's long-lived state is frozen out of the garbage collector; resetting the memo
  unfreezes it, and every ``FULL_COLLECTION_EVERY`` cycles a full collection reclaims what died meanwhile.
"""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from tests.volcanoweb.clusters.helpers import make_gang
from volcanoweb.clusters import services as cluster_services
from volcanoweb.clusters.models import SimPod
from volcanoweb.core.idlist import OneOf, one_of
from volcanoweb.jobs.models import Pod
from volcanoweb.scheduling import cycles
from volcanoweb.scheduling.models import RunStatus
from volcanoweb.scheduling.services import run_cycle

PODS = 24  # binds in the cycle: an IN list of that many parameters is what the bind must not send

_IN_LIST = re.compile(r"\bIN \(([^()]*)\)", re.IGNORECASE)


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen and a fresh memo (the loop's state is per process)."""
    cycles._memo.reset()
    gc.unfreeze()
    yield
    cycles._memo.reset()
    gc.unfreeze()


@pytest.fixture
def cluster(sim: Any, cast: Any) -> Any:
    cluster_services.sync_from_backend()
    return sim


def _pending_gang(cast: Any) -> None:
    make_gang("many", PODS, tenant=cast.team_a, cpu=100, memory=64 * 1024 * 1024)
    cluster_services.sync_from_backend()


def _binding_cycle(cast: Any, *, pending: bool = True) -> Any:
    if pending:
        _pending_gang(cast)
    run = run_cycle()
    assert run is not None
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.binds == PODS
    return run


def _longest_in_list(sql: str) -> int:
    return max((len(m.group(1).split(",")) for m in _IN_LIST.finditer(sql)), default=0)


def test_the_bind_sends_ids_and_names_as_one_parameter(cluster: Any, cast: Any) -> None:
    _pending_gang(cast)
    with CaptureQueriesContext(connection) as queries:
        _binding_cycle(cast, pending=False)
    assert all(p.node_name for p in Pod.objects.filter(name__startswith="many-"))
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("SELECT", "DELETE"))]
    longest = {sql: _longest_in_list(sql) for sql in reads if _longest_in_list(sql) >= PODS}
    assert longest == {}  # no SELECT or DELETE of the cycle names the bound pods one parameter each
    marker = "= ANY(" if connection.vendor == "postgresql" else "json_each("
    pod_table, sim_table = Pod._meta.db_table, SimPod._meta.db_table
    assert any(marker in sql and pod_table in sql for sql in reads)  # the bind's read of the pods
    assert any(marker in sql and sim_table in sql for sql in reads)  # the cluster's read in bind_many


@pytest.mark.parametrize(
    "names",
    [
        ["plain", "with space", 'with"quote', "back\\slash", "com,ma", "{brace}", "NULL", "ünï", "'single'"],
        ["only-one"],
    ],
)
def test_one_of_matches_like_in(sim: Any, names: list[str]) -> None:
    SimPod.objects.bulk_create([SimPod(namespace="ns", name=n) for n in [*names, "other", "NULL2"]])
    by_name = SimPod.objects.filter(one_of("name", names)).values_list("name", flat=True)
    assert sorted(by_name) == sorted(names)
    ids = list(SimPod.objects.filter(name__in=names).values_list("pk", flat=True))
    assert sorted(SimPod.objects.filter(OneOf(F("pk"), ids)).values_list("name", flat=True)) == sorted(names)
    assert not SimPod.objects.filter(one_of("pk", [])).exists()
    assert SimPod.objects.exclude(one_of("name", names)).count() == 2


def test_the_loop_state_is_frozen_after_a_cycle_and_unfrozen_when_the_memo_is_reset(cluster: Any, cast: Any) -> None:
    assert gc.get_freeze_count() == 0
    _binding_cycle(cast)
    assert gc.get_freeze_count() > 0
    tasks = [entry.task for entry in cycles._memo.pods.entries.values() if entry.task is not None]
    assert len(tasks) == PODS
    tracked = {id(o) for o in gc.get_objects()}  # the collector's generations, not the frozen one
    assert not any(id(task) in tracked for task in tasks)
    cycles._memo.reset()
    assert gc.get_freeze_count() == 0
    tracked = {id(o) for o in gc.get_objects()}
    assert all(id(task) in tracked for task in tasks)


class _Node:
    """An object that only the cyclic collector can free (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


def test_cyclic_garbage_frozen_by_a_cycle_is_collected_every_n_cycles(
    cluster: Any, cast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cycles, "FULL_COLLECTION_EVERY", 3)
    monkeypatch.setattr(cycles, "_freezer", cycles._Freezer())
    garbage = _Node()
    alive = weakref.ref(garbage)
    _binding_cycle(cast)  # cycle 1 freezes it
    del garbage
    gc.collect()
    assert alive() is not None  # frozen: a full collection does not reach it
    run_cycle()  # cycle 2
    assert alive() is not None
    run_cycle()  # cycle 3: unfreeze, collect, freeze again
    assert alive() is None
    assert gc.get_freeze_count() > 0
