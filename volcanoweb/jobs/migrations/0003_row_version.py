"""Pod and PodGroup rows get a ``row_version`` that a database trigger bumps on every change (ADR 0018).

The scheduler's snapshot reads the full rows only of the ids whose version moved since its last cycle.
"""

from typing import Any

from django.db import migrations, models

# The trigger code as it was (the product no longer has it: migration 0007 drops the triggers and the column).
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


def _install(connection: Any) -> list[str]:
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


def _uninstall(connection: Any) -> None:
    """Drop the triggers (and PostgreSQL's function): the reverse of migration ``jobs.0003``."""
    with connection.cursor() as cursor:
        for table in TABLES:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)} ON {table}")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger_name(table)}")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS jobs_bump_row_version()")


def install(apps: Any, schema_editor: Any) -> None:
    _install(schema_editor.connection)


def uninstall(apps: Any, schema_editor: Any) -> None:
    _uninstall(schema_editor.connection)


HELP = (
    "bumped by the database on every change of the row (a trigger, migration jobs 0003): "
    "the scheduler's snapshot re-reads only rows whose row_version moved"
)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0002_resourcequota"),
    ]

    operations = [
        migrations.AddField(
            model_name="pod",
            name="row_version",
            field=models.BigIntegerField(default=0, editable=False, help_text=HELP),
        ),
        migrations.AddField(
            model_name="podgroup",
            name="row_version",
            field=models.BigIntegerField(default=0, editable=False, help_text=HELP),
        ),
        migrations.RunPython(install, uninstall),
    ]
