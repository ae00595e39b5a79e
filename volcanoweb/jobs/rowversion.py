"""Row versions of Pod and PodGroup rows, bumped by the database itself (ADR 0018).

Every UPDATE that changes a ``jobs_pod`` or ``jobs_podgroup`` row raises its ``row_version`` by one, whoever
writes it: ``save()``, ``QuerySet.update()``, ``bulk_update``, ``clusters.bulk.bulk_update_rows`` and raw SQL
alike, because a trigger does it, not the writers. The scheduler's snapshot
(:mod:`volcanoweb.scheduling.snapshots`) reads the cheap ``(id, row_version)`` pairs each cycle and the full rows
only of the ids whose version moved (or that it has not seen); a deleted row is simply not in the pairs.

* PostgreSQL: a ``BEFORE UPDATE`` row trigger sets ``NEW.row_version := OLD.row_version + 1`` when the row
  changes at all (``OLD.* IS DISTINCT FROM NEW.*``, so every column, also those added later, counts; an
  UPDATE that writes the same values leaves the version alone). A writer that saves a stale ``row_version``
  still gets ``OLD + 1``.
* SQLite (the embedded mode) cannot change ``NEW`` in a trigger: an ``AFTER UPDATE`` row trigger writes
  ``OLD.row_version + 1`` to the row (SQLite's ``recursive_triggers`` is off, so that write fires nothing)
  when a column other than the two versions changed.
* The change log's stamp of ``resource_version`` (ADR 0024) is no change of the row on either database.

A new row starts at 0; row ids are never reused (PostgreSQL identity, SQLite ``AUTOINCREMENT``), so
``(id, row_version)`` names one state of one row. SQLite drops a table's triggers when Django rebuilds the
table (many ``AlterField`` operations do), so :func:`install` runs after every ``migrate`` too (``post_migrate``,
:mod:`volcanoweb.jobs.apps`), not only in migration ``jobs.0003``; it creates what is missing and nothing else.
"""

from __future__ import annotations

from typing import Any

#: The tables whose rows carry a database-maintained ``row_version``.
TABLES = ("jobs_pod", "jobs_podgroup")

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION jobs_bump_row_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The change log stamping the row's resource_version (volcanoweb/feed, ADR 0024) is no change of it.
    IF current_setting('volcanoweb.feed_stamping', true) = 'on' THEN
        RETURN NEW;
    END IF;
    NEW.row_version := OLD.row_version + 1;
    RETURN NEW;
END
$$
"""
_PG_TRIGGER = """
CREATE TRIGGER {table}_row_version BEFORE UPDATE ON {table} FOR EACH ROW
WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION jobs_bump_row_version()
"""
_SQLITE_TRIGGER = """
CREATE TRIGGER {table}_row_version AFTER UPDATE ON {table} FOR EACH ROW WHEN {changed}
BEGIN
    UPDATE {table} SET row_version = OLD.row_version + 1 WHERE id = NEW.id;
END
"""


def trigger_name(table: str) -> str:
    """The name of ``table``'s row-version trigger."""
    return f"{table}_row_version"


def installed(connection: Any) -> set[str]:
    """Return the tables of :data:`TABLES` whose row-version trigger exists in ``connection``'s database."""
    names = [trigger_name(t) for t in TABLES]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname = ANY(%s) AND c.relname = ANY(%s) AND pg_table_is_visible(c.oid)",
                [names, list(TABLES)],
            )
        elif connection.vendor == "sqlite":
            marks = ", ".join(["%s"] * len(names))
            cursor.execute(f"SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})", names)
        else:
            raise NotImplementedError(f"row versions need PostgreSQL or SQLite, not {connection.vendor}")
        return {row[0] for row in cursor.fetchall()}


def _sqlite_changed(cursor: Any, table: str) -> str:
    """The trigger's condition: a column other than the two versions changed (the change log's stamp of
    ``resource_version`` is no change of the row)."""
    cursor.execute(f"PRAGMA table_info({table})")
    columns = [row[1] for row in cursor.fetchall() if row[1] not in ("row_version", "resource_version")]
    return "(" + " OR ".join(f'OLD."{c}" IS NOT NEW."{c}"' for c in columns) + ")"


def install(connection: Any) -> list[str]:
    """Create the row-version triggers that are missing (and refresh the trigger code); return the tables that
    got one."""
    missing = [t for t in TABLES if t not in installed(connection)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_PG_FUNCTION)
            for table in missing:
                cursor.execute(_PG_TRIGGER.format(table=table))
        else:
            for table in TABLES:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)}")
                cursor.execute(_SQLITE_TRIGGER.format(table=table, changed=_sqlite_changed(cursor, table)))
    return missing


def uninstall(connection: Any) -> None:
    """Drop the triggers (and PostgreSQL's function): the reverse of migration ``jobs.0003``."""
    with connection.cursor() as cursor:
        for table in TABLES:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)}")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS jobs_bump_row_version()")
