"""The SQLite backend reuses this process's closed connections (``volcanoweb/core/backends/sqlite3``)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.db import connection
from django.db.backends.sqlite3 import base as django_sqlite

from volcanoweb.core.backends.sqlite3.base import POOL, Pool

pytestmark = pytest.mark.sqlite_only


def _no_new_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, conn_params: Any) -> Any:
        raise AssertionError("opened a new connection")

    monkeypatch.setattr(django_sqlite.DatabaseWrapper, "get_new_connection", refuse)


def test_a_closed_connection_is_taken_again_by_the_next_connect(
    transactional_db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection.ensure_connection()
    raw = connection.connection
    connection.close()
    assert connection.connection is None
    assert any(conn is raw for _, conn in POOL._idle)
    _no_new_connections(monkeypatch)
    connection.ensure_connection()  # from the pool (other threads of the suite may have given theirs back too)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone()[0] == 1


def test_a_connection_closed_in_a_transaction_comes_back_without_it(transactional_db: Any) -> None:
    connection.ensure_connection()
    raw = connection.connection
    raw.execute("BEGIN")
    raw.execute("CREATE TEMP TABLE pool_probe (x int)")
    assert raw.in_transaction
    connection.close()
    assert any(conn is raw for _, conn in POOL._idle)
    assert not raw.in_transaction
    with POOL._lock:  # take this one back by hand, whatever else the pool holds
        POOL._idle = [entry for entry in POOL._idle if entry[1] is not raw]
    connection.connection = raw
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_temp_master WHERE name = 'pool_probe'")
        assert cursor.fetchone()[0] == 0  # rolled back


def test_connections_are_kept_per_database_and_up_to_the_size() -> None:
    pool = Pool(size=2)
    a, b, c = object(), object(), object()
    assert pool.give("one", a)
    assert pool.give("two", b)
    assert not pool.give("one", c)  # full: the caller closes it
    assert pool.take("two") is b
    assert pool.take("two") is None
    assert pool.take("one") is a


def test_a_forked_child_never_takes_its_parents_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = Pool(size=4)
    pool.give("db", object())
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a child the process forked
    assert pool.take("db") is None
    assert POOL.size >= 20  # the embedded process's request threads each hold one
