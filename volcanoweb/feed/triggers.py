"""The database side of the log: triggers that append an entry for every change, and revision stamping.

Why it is built this way is ADR 0024 (docs/adr/0024-change-log.md); in short:

* **Every writer is covered** because the database writes the entries: an ``AFTER INSERT/UPDATE/DELETE``
  row trigger on each table of :data:`volcanoweb.feed.tables.TRACKED` appends the new row as JSON (``data``;
  the old row for a delete) and the old row (``prev``), in the writer's own transaction. An UPDATE that
  changes only ``resource_version``/``row_version`` (or nothing) appends nothing.
* **Revisions follow commit order.** SQLite has one writer at a time (every transaction is ``BEGIN
  IMMEDIATE``), so its trigger takes ``feed_head.rev + 1`` at once. PostgreSQL runs writers side by side, so
  an entry is written with ``rev`` NULL and the revisions are given at commit: ``volcanoweb_feed_commit()``
  (called by :mod:`volcanoweb.core.backends.postgresql` just before ``COMMIT``; a deferred constraint trigger
  does the same for a statement run outside a transaction) first runs the deferred constraint checks, then
  increments ``feed_head`` — whose row lock it holds until the commit — and numbers its entries. A second
  transaction committing meanwhile waits on that row, so it can only get higher revisions and can only
  become visible later: no reader ever sees revision 11 before 10, and a rolled-back stamp gives its numbers
  back (no gaps).
* **``resourceVersion`` is the last revision**: stamping also writes each changed row's ``resource_version``
  (and the entry's copy of it).
* Tests that run inside a transaction which never commits set ``volcanoweb.feed_stamp = 'write'`` for that
  transaction (``SET LOCAL``): entries are stamped as they are written (one connection, so the order holds).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as django_apps
from django.db import models

from volcanoweb.feed.tables import IGNORED, TRACKED, Tracked

#: The most columns a SQLite trigger may serialise (``json_object`` takes at most 127 arguments).
SQLITE_MAX_COLUMNS = 63

_PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION volcanoweb_feed_stamp() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    top bigint;
    t text;
BEGIN
    SELECT count(*) INTO n FROM feed_entry WHERE rev IS NULL;
    IF n = 0 THEN
        RETURN 0;
    END IF;
    PERFORM set_config('volcanoweb.feed_stamping', 'on', true);
    -- Writing resource_version below re-runs the foreign-key checks of every row this transaction wrote
    -- (PostgreSQL re-checks a row version of its own transaction even when the key is unchanged), and a
    -- check locks the referenced row. Take those locks now, before the head's: once holding the head, a
    -- transaction must never wait for another, or two committers could deadlock.
    FOR t IN SELECT DISTINCT tbl FROM feed_entry WHERE rev IS NULL AND type <> 'D' LOOP
        EXECUTE format('SELECT volcanoweb_feed_lock_%s()', t);
    END LOOP;
    INSERT INTO feed_head (id, rev, compacted) VALUES (1, coalesce((SELECT max(rev) FROM feed_entry), 0) + n, 0)
        ON CONFLICT (id) DO UPDATE SET rev = feed_head.rev + n RETURNING rev INTO top;
    UPDATE feed_entry e SET rev = o.r, data = jsonb_set(e.data, '{resource_version}', to_jsonb(o.r))
        FROM (SELECT id, top - n + row_number() OVER (ORDER BY id) AS r FROM feed_entry WHERE rev IS NULL) o
        WHERE e.id = o.id;
    FOR t IN SELECT DISTINCT tbl FROM feed_entry WHERE rev > top - n AND type <> 'D' LOOP
        EXECUTE format(
            'UPDATE %I AS t SET resource_version = e.rev FROM (SELECT obj_id, max(rev) AS rev FROM feed_entry '
            'WHERE rev > $1 AND tbl = $2 AND type <> ''D'' GROUP BY obj_id) AS e WHERE t.id = e.obj_id', t
        ) USING top - n, t;
    END LOOP;
    PERFORM set_config('volcanoweb.feed_stamping', 'off', true);
    PERFORM pg_notify('volcanoweb_feed', top::text);
    RETURN top;
END
$$;

CREATE OR REPLACE FUNCTION volcanoweb_feed_commit() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM feed_entry WHERE rev IS NULL) THEN
        RETURN 0;
    END IF;
    -- The deferred foreign-key checks run now, before the head's row lock is taken: they may wait on rows
    -- of a transaction that is itself waiting for the head.
    PERFORM set_config('volcanoweb.feed_committing', 'on', true);
    SET CONSTRAINTS ALL IMMEDIATE;
    RETURN volcanoweb_feed_stamp();
END
$$;

CREATE OR REPLACE FUNCTION volcanoweb_feed_deferred() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('volcanoweb.feed_committing', true) IS DISTINCT FROM 'on' THEN
        PERFORM volcanoweb_feed_stamp();
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION volcanoweb_feed_record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d jsonb;
    p jsonb;
    op char(1);
BEGIN
    IF current_setting('volcanoweb.feed_stamping', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        d := to_jsonb(NEW);
        op := 'A';
    ELSIF TG_OP = 'UPDATE' THEN
        d := to_jsonb(NEW);
        p := to_jsonb(OLD);
        op := 'M';
        IF (d - '{ignored}'::text[]) = (p - '{ignored}'::text[]) THEN
            RETURN NULL;
        END IF;
    ELSE
        d := to_jsonb(OLD);
        op := 'D';
    END IF;
    INSERT INTO feed_entry (rev, tbl, kind, obj_id, type, namespace, name, uid, data, prev, at)
    VALUES (NULL, TG_TABLE_NAME, TG_ARGV[0], (d->>'id')::bigint, op, coalesce(d->>TG_ARGV[1], ''),
            coalesce(d->>TG_ARGV[2], ''), coalesce(d->>'uid', ''), d, p, clock_timestamp());
    IF current_setting('volcanoweb.feed_stamp', true) = 'write' THEN
        PERFORM volcanoweb_feed_stamp();
    END IF;
    RETURN NULL;
END
$$;
""".replace("{ignored}", "{" + ",".join(IGNORED) + "}")

#: The head row when it is missing (a new database, or a flush that emptied it before the entries).
_HEAD_ROW = "INSERT INTO feed_head (id, rev, compacted) VALUES (1, coalesce((SELECT max(rev) FROM feed_entry), 0), 0)"

_PG_DEFERRED = """
CREATE CONSTRAINT TRIGGER feed_entry_stamp AFTER INSERT ON feed_entry DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION volcanoweb_feed_deferred()
"""


def _model(tracked: Tracked) -> type[models.Model]:
    return django_apps.get_model(tracked.model)


def trigger_names(tracked: Tracked) -> list[str]:
    """The names of the triggers on one table (one per operation on SQLite, one on PostgreSQL)."""
    table = _model(tracked)._meta.db_table
    return [f"feed_{table}_{op}" for op in ("insert", "update", "delete")]


def _pg_lock_function(cursor: Any, table: str) -> str:
    """``volcanoweb_feed_lock_<table>()``: take the KEY SHARE locks the foreign-key checks of this
    transaction's rows of ``table`` will need (what PostgreSQL's own check would take), in one statement per key."""
    cursor.execute(
        "SELECT a.attname, r.relname, ra.attname, format_type(ra.atttypid, ra.atttypmod) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
        "JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1] "
        "WHERE c.contype = 'f' AND t.relname = %s AND pg_table_is_visible(t.oid) AND array_length(c.conkey, 1) = 1",
        [table],
    )
    statements = [
        f'PERFORM 1 FROM "{ref}" AS x WHERE x."{ref_column}" IN '
        f"(SELECT (e.data->>'{column}')::{kind} FROM feed_entry e WHERE e.rev IS NULL AND e.tbl = '{table}' "
        f"AND e.type <> 'D' AND e.data->>'{column}' IS NOT NULL) FOR KEY SHARE OF x;"
        for column, ref, ref_column, kind in cursor.fetchall()
    ]
    body = "\n    ".join(statements) or "NULL;"
    return (
        f"CREATE OR REPLACE FUNCTION volcanoweb_feed_lock_{table}() RETURNS void LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n    {body}\nEND\n$$"
    )


def _pg_install(cursor: Any) -> None:
    for tracked in TRACKED:
        table = _model(tracked)._meta.db_table
        cursor.execute(_pg_lock_function(cursor, table))
    cursor.execute(_PG_FUNCTIONS)
    cursor.execute("DROP TRIGGER IF EXISTS feed_entry_stamp ON feed_entry")
    cursor.execute(_PG_DEFERRED)
    for tracked in TRACKED:
        table = _model(tracked)._meta.db_table
        cursor.execute(f"DROP TRIGGER IF EXISTS feed_{table} ON {table}")
        cursor.execute(
            f"CREATE TRIGGER feed_{table} AFTER INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION volcanoweb_feed_record('{tracked.kind}', '{tracked.namespace}', '{tracked.name}')"
        )
    cursor.execute(_HEAD_ROW + " ON CONFLICT (id) DO NOTHING")


def _sqlite_value(field: models.Field[Any, Any], row: str) -> str:
    if isinstance(field, models.JSONField):
        return f'json({row}."{field.column}")'
    return f'{row}."{field.column}"'


def _sqlite_json(fields: list[models.Field[Any, Any]], row: str) -> str:
    return "json_object(" + ", ".join(f"'{f.column}', {_sqlite_value(f, row)}" for f in fields) + ")"


def _sqlite_triggers(tracked: Tracked) -> list[str]:
    model = _model(tracked)
    table = model._meta.db_table
    fields = list(model._meta.concrete_fields)
    if len(fields) > SQLITE_MAX_COLUMNS:
        raise ValueError(f"{table} has {len(fields)} columns; the SQLite log trigger serialises at most 63")
    columns = {f.column for f in fields}
    head = "(SELECT rev FROM feed_head WHERE id = 1)"
    plain = [f for f in fields if f.column not in (*IGNORED, "resource_version")]
    changed = " OR ".join(f'OLD."{f.column}" IS NOT NEW."{f.column}"' for f in plain)
    if "resource_version" in columns:
        # A writer's own bump counts; the write-back of the stamp below (rv := head) does not.
        changed += f" OR (NEW.resource_version IS NOT OLD.resource_version AND NEW.resource_version IS NOT {head})"
    # (A flush may have emptied feed_head before the entries: a new head continues after the last entry.)
    bump = (
        "INSERT INTO feed_head (id, rev, compacted) VALUES (1, coalesce((SELECT max(rev) FROM feed_entry), 0) + 1, 0) "
        "ON CONFLICT(id) DO UPDATE SET rev = rev + 1;"
    )
    stamp = "resource_version" in columns
    out = []
    for op, row, code, prev in (
        ("insert", "NEW", "A", "NULL"),
        ("update", "NEW", "M", _sqlite_json(fields, "OLD")),
        ("delete", "OLD", "D", "NULL"),
    ):
        namespace = f"{row}.{tracked.namespace}" if tracked.namespace else "''"
        name = f"{row}.{tracked.name}"
        uid = f"{row}.uid" if "uid" in columns else "''"
        data = _sqlite_json(fields, row)
        if stamp:
            data = f"json_set({data}, '$.resource_version', {head})"
        when = f" WHEN {changed}" if op == "update" else ""
        write_back = (
            f"UPDATE {table} SET resource_version = {head} WHERE id = NEW.id;" if stamp and op != "delete" else ""
        )
        out.append(
            f"CREATE TRIGGER feed_{table}_{op} AFTER {op.upper()} ON {table} FOR EACH ROW{when}\nBEGIN\n"
            f"{bump}\n"
            "INSERT INTO feed_entry (rev, tbl, kind, obj_id, type, namespace, name, uid, data, prev, at) VALUES ("
            f"{head}, '{table}', '{tracked.kind}', {row}.id, '{code}', coalesce({namespace}, ''), "
            f"coalesce(CAST({name} AS TEXT), ''), coalesce(CAST({uid} AS TEXT), ''), {data}, {prev}, "
            "strftime('%Y-%m-%d %H:%M:%f', 'now'));\n"
            f"{write_back}\nEND"
        )
    return out


def _sqlite_install(cursor: Any) -> None:
    for tracked in TRACKED:
        for name in trigger_names(tracked):
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        for statement in _sqlite_triggers(tracked):
            cursor.execute(statement)
    cursor.execute(_HEAD_ROW + " ON CONFLICT (id) DO NOTHING")


def install(connection: Any) -> None:
    """(Re)create the triggers, the PostgreSQL functions and the head row (idempotent)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            _pg_install(cursor)
        elif connection.vendor == "sqlite":
            _sqlite_install(cursor)
        else:
            raise NotImplementedError(f"the change log needs PostgreSQL or SQLite, not {connection.vendor}")


def uninstall(connection: Any) -> None:
    """Drop the triggers and functions (the reverse of migration ``feed.0001``)."""
    with connection.cursor() as cursor:
        for tracked in TRACKED:
            table = _model(tracked)._meta.db_table
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS feed_{table} ON {table}")
            else:
                for name in trigger_names(tracked):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER IF EXISTS feed_entry_stamp ON feed_entry")
            for function in ("record", "deferred", "commit", "stamp"):
                cursor.execute(f"DROP FUNCTION IF EXISTS volcanoweb_feed_{function}()")
            for tracked in TRACKED:
                cursor.execute(f"DROP FUNCTION IF EXISTS volcanoweb_feed_lock_{_model(tracked)._meta.db_table}()")
