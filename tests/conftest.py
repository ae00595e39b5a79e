"""Suite-wide pytest configuration: test order, eager Celery, and the two-database mechanism.

Two databases
-------------
The product's default (``make run``) is SQLite; the stack is PostgreSQL. ``make test`` runs the whole
suite on PostgreSQL, then ``make test-sqlite`` runs the tests marked ``both_databases`` again on SQLite
(a database file, with the options ``make run`` uses). A test is marked ``both_databases``

* automatically when it lives under one of :data:`BOTH_DATABASES` (a new test file there needs nothing), or
* explicitly, with ``@pytest.mark.both_databases``, anywhere else.

A test of one backend's own implementation says so with ``@pytest.mark.postgresql_only`` or
``@pytest.mark.sqlite_only``; it is deselected (not skipped) on the other backend. See CONTRIBUTING.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Directories (relative to the repository) whose tests run on both databases.
BOTH_DATABASES = ("tests/cli", "tests/volcanoweb")
#: backend marker -> the database vendor it needs
ONLY = {"postgresql_only": "postgresql", "sqlite_only": "sqlite"}


def database_vendor() -> str:
    """``postgresql`` or ``sqlite``: the vendor of the configured default database (``none`` without Django)."""
    try:
        from django.conf import settings

        engine = str(settings.DATABASES["default"]["ENGINE"])
    except Exception:  # pytest -p no:django (tests/scheduler alone): no settings
        return "none"
    return "sqlite" if engine.endswith("sqlite3") else engine.rsplit(".", 1)[-1]


#: Where the browser tests live: ``make test-browser`` collects this folder alone, rather than the whole suite in
#: every xdist worker to select a few dozen tests.
BROWSER_DIR = "tests/browser"


def _relative(item: pytest.Item) -> str:
    try:
        return Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return ""


def _in_both_databases_dirs(item: pytest.Item) -> bool:
    relative = _relative(item)
    return bool(relative) and any(relative == d or relative.startswith(d + "/") for d in BOTH_DATABASES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    vendor = database_vendor()
    kept, deselected = [], []
    misplaced = [
        item.nodeid
        for item in items
        if item.get_closest_marker("browser") and not _relative(item).startswith(BROWSER_DIR + "/")
    ]
    if misplaced:
        raise pytest.UsageError(f"browser tests live under {BROWSER_DIR}/ (make test-browser collects it): {misplaced}")
    for item in items:
        if _in_both_databases_dirs(item):
            item.add_marker(pytest.mark.both_databases)
        wanted = [ONLY[m.name] for m in item.iter_markers() if m.name in ONLY]
        (deselected if wanted and vendor not in wanted else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    # Playwright's sync API keeps an event loop running in the main thread, which
    # breaks asyncio tests that run after it: move browser tests to the end.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


def worker_redis_url(url: str, index: int) -> str:
    """The Redis database of xdist worker ``index``: the run's database number plus ``index + 1`` (of 16)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(base + index + 1) % 16}"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list[Any]) -> None:
    """Each pytest-xdist worker gets a Redis database of its own, as pytest-django gives it a test database
    of its own (``test_<name>_gw<N>``): the real Celery workers and channel layers its end-to-end tests start
    must never take another worker's tasks or messages. Set in the worker's environment before it starts, so
    its settings and the processes it starts read it."""
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return
    for index, spec in enumerate(specs):
        spec.env["REDIS_URL"] = worker_redis_url(url, index)


def pytest_report_header(config: pytest.Config) -> str:
    return f"database: {database_vendor()}"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: Any) -> None:
    """On SQLite, the test database is a file (as in ``make run``), not Django's default in-memory one."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if database_vendor() == "sqlite":
        db.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("sqlite") / "test.sqlite3")


def _django(request: pytest.FixtureRequest) -> bool:
    """Whether pytest-django runs (``make test-scheduler`` runs the scheduling core's tests without it)."""
    return bool(request.config.pluginmanager.hasplugin("django"))


def _builtin_queues_after_flush(sender: Any, **kwargs: Any) -> None:
    """After the last app's ``post_migrate`` (the change log's, which puts its triggers back): Volcano's built-in
    queues, which a transactional test's flush removed with every other row (the data migration made them)."""
    if sender.label == "feed":
        from volcanoweb.queues.builtin import ensure_builtin_queues

        ensure_builtin_queues()


@pytest.fixture(scope="session", autouse=True)
def _builtin_queues_survive_flushes(request: pytest.FixtureRequest) -> None:
    """``root`` and ``default`` exist in every test, whichever tests ran before it in the same process (pytest-xdist's
    ``worksteal`` runs a test after a transactional test's flush)."""
    if _django(request):
        from django.db.models.signals import post_migrate

        post_migrate.connect(_builtin_queues_after_flush, weak=False, dispatch_uid="tests-builtin-queues")


def _delete_flush(original: Any) -> Any:
    """PostgreSQL's ``sql_flush`` for the test databases: ``DELETE`` with the triggers off rather than ``TRUNCATE``.

    A transactional test's teardown flushes every table; ``TRUNCATE`` gives each of them (and its indexes) new
    files, 0.55 s per flush here, where deleting the few rows a test left takes 0.02 s. With
    ``session_replication_role = replica`` for the flush's transaction no trigger runs: neither the foreign keys'
    (every table is emptied) nor the change log's (which is emptied too). Needs a superuser, as the throw-away
    and CI servers are; else, and for a flush that resets sequences, ``TRUNCATE`` as Django does."""
    superuser: dict[str, bool] = {}

    def sql_flush(
        self: Any, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        if "yes" not in superuser:
            with self.connection.cursor() as cursor:
                cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
                superuser["yes"] = bool(cursor.fetchone()[0])
        if reset_sequences or not superuser["yes"] or not tables:
            return original(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        quote = self.quote_name
        return ["SET LOCAL session_replication_role = replica", *(f"DELETE FROM {quote(t)}" for t in tables)]

    return sql_flush


@pytest.fixture(scope="session", autouse=True)
def _fast_flush(request: pytest.FixtureRequest) -> Iterator[None]:
    """Transactional tests on PostgreSQL flush with ``DELETE`` (:func:`_delete_flush`)."""
    if not _django(request) or database_vendor() != "postgresql":
        yield
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    original = DatabaseOperations.sql_flush
    DatabaseOperations.sql_flush = _delete_flush(original)  # type: ignore[method-assign]
    yield
    DatabaseOperations.sql_flush = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _insights_in_line(request: pytest.FixtureRequest) -> None:
    """Record insights inside the cycle in unit and integration tests (their rows live in the test's
    transaction, which the recorder's writer thread cannot see); e2e tests and the recorder's own tests
    (``recorder_thread`` marker) use the writer thread, as the product does."""
    if not _django(request):
        return
    if not (request.node.get_closest_marker("e2e") or request.node.get_closest_marker("recorder_thread")):
        request.getfixturevalue("settings").INSIGHTS_RECORD_ASYNC = False


@pytest.fixture(autouse=True)
def _private_cache(request: pytest.FixtureRequest) -> None:
    """Each unit and integration test counts failed bearer tokens in a cache of its own (the stack's Redis
    cache would carry them from test to test); e2e tests use what their processes configure."""
    if _django(request) and not request.node.get_closest_marker("e2e"):
        location = f"test-{request.node.nodeid}"
        request.getfixturevalue("settings").CACHES = {
            "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": location}
        }


@pytest.fixture(autouse=True)
def _eager_celery(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run Celery tasks in-process in unit and integration tests; e2e tests use real workers."""
    if request.node.get_closest_marker("e2e") or not _django(request):
        yield
        return
    from volcanoweb.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _no_tailer_after_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that started this process's change-log tailer (an in-process ASGI socket or watch) ends it, so
    the thread never reads the database of a test that may not, nor holds a connection at teardown."""
    yield
    if not _django(request):
        return
    from volcanoweb.feed import tailer

    tailer.shutdown()


def _transactional(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])):
        return True
    return bool({"transactional_db", "live_server", "django_db_reset_sequences"} & set(request.fixturenames))


@pytest.fixture(autouse=True)
def _feed_stamps_at_write(request: pytest.FixtureRequest) -> None:
    """A test inside a transaction that never commits has the change log's revisions given at write time.

    On PostgreSQL the revisions are given at commit (ADR 0024), which such a test never reaches; ``SET LOCAL``
    lasts until the test's transaction is rolled back. Transactional tests and real processes commit.
    """
    uses_db = request.node.get_closest_marker("django_db") is not None or "db" in request.fixturenames
    if not uses_db or _transactional(request) or database_vendor() != "postgresql":
        return
    request.getfixturevalue("db")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('volcanoweb.feed_stamp', 'write', true)")
