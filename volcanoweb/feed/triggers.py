"""The database side of the log: triggers that append an entry for every change, and revision stamping.

Why it is built this way is ADR 0024 (docs/adr/0024-change-log.md) and ADR 0029; in short:

* **Every writer is covered** because the database writes the entries: an ``AFTER INSERT/UPDATE/DELETE``
  row trigger on each table of :data:`volcanoweb.feed.tables.TRACKED` appends the new row as JSON (``data``;
  the old row for a delete) and the old row (``prev``), in the writer's own transaction. An UPDATE that
  changes nothing (the same values written again) appends nothing; nor does the stamp's write of ``resource_version``.
* **Revisions are taken at commit, side by side** (ADR 0029). SQLite has one writer at a time (every
  transaction is ``BEGIN IMMEDIATE``), so its trigger takes ``feed_head.rev + 1`` at once and commit order is
  write order. PostgreSQL runs writers side by side: an entry is written with ``rev`` NULL, and
  ``volcanoweb_feed_commit()`` (sent by :mod:`volcanoweb.core.backends.postgresql` with ``COMMIT``; a deferred
  constraint trigger does the same for a statement run outside a transaction) runs the deferred constraint
  checks, registers the transaction as committing (a shared advisory lock), takes its revisions from the
  ``feed_rev`` sequence, publishes the first (a second advisory lock) and numbers its entries, taking no lock
  another committer waits for. Readers read up to ``volcanoweb_feed_frontier()``: the sequence's value, held
  below the first revision of every transaction still committing. So no reader ever sees revision 11 before
  10. A rolled-back commit leaves a gap, which readers pass.
* **``resourceVersion`` is the last revision**: stamping also writes each changed row's ``resource_version``
  (``volcanoweb_feed_versions``: one static statement per table); readers take an entry's revision from its
  ``rev`` column.
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

#: Advisory lock classes (the first of two int4 keys) of the committers PostgreSQL readers wait for: a
#: committing transaction holds ``(REGISTERED, 0)`` from before it takes its first revision, and
#: ``(FIRST, first revision mod 2^31)`` once it has taken them, both until its commit is visible.
REGISTERED = 0xFEED
FIRST = 0xFEEE
#: A first revision is published modulo this (an int4 key); readers rebuild it from the sequence's value.
_MODULUS = 1 << 31

_PG_FUNCTIONS = (
    """
CREATE OR REPLACE FUNCTION volcanoweb_feed_stamp() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    revs bigint[];
    n int;
BEGIN
    SELECT array_agg(id ORDER BY id) INTO ids FROM feed_entry WHERE rev IS NULL;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    n := array_length(ids, 1);
    PERFORM set_config('volcanoweb.feed_stamping', 'on', true);
    -- Registered before the revisions are taken, published once they are: a reader that sees the first
    -- without the second waits, one that sees neither knows this transaction's revisions are above the
    -- sequence value it read first (volcanoweb_feed_frontier).
    PERFORM pg_advisory_xact_lock_shared({registered}, 0);
    SELECT array_agg(v ORDER BY o) INTO revs
        FROM (SELECT o, nextval('feed_rev') AS v FROM generate_series(1, n) AS o) AS taken;
    PERFORM pg_advisory_xact_lock_shared({first}, (revs[1] % {modulus})::int);
    -- ``at`` becomes the commit's time (the time the entry was written, until now): what a reader's delay counts from
    UPDATE feed_entry e SET rev = u.r, at = clock_timestamp() FROM unnest(ids, revs) AS u(id, r) WHERE e.id = u.id;
    PERFORM volcanoweb_feed_versions(ids);
    PERFORM set_config('volcanoweb.feed_stamping', 'off', true);
    RETURN revs[n];
END
$$;

CREATE OR REPLACE FUNCTION volcanoweb_feed_commit() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM feed_entry WHERE rev IS NULL) THEN
        RETURN 0;
    END IF;
    -- The deferred foreign-key checks run now, before this transaction registers as committing: a check
    -- may wait for a row lock, and readers wait for registered committers.
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

CREATE OR REPLACE FUNCTION volcanoweb_feed_frontier(wait_ms int DEFAULT 0) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
    target bigint;
    waiting boolean;
    lowest bigint;
    safe bigint;
    tries int := 0;
    deadline timestamptz := clock_timestamp() + make_interval(secs => greatest(wait_ms, 0) / 1000.0);
BEGIN
    LOOP
        -- 1. every revision up to last has been taken, by a transaction that has committed, rolled back, or
        --    registered before this read
        SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO last FROM feed_rev;
        IF target IS NULL THEN
            target := last;
        END IF;
        -- 2. the registered committers of this database (but this session: its own writes it sees)
        WITH held AS (
            SELECT pid, classid::bigint AS c, objid::bigint AS o FROM pg_locks
            WHERE locktype = 'advisory' AND objsubid = 2 AND classid IN ({registered}, {first}) AND granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND pid <> pg_backend_pid()
        )
        SELECT coalesce(bool_or(c = {registered} AND NOT EXISTS (
                   SELECT 1 FROM held f WHERE f.c = {first} AND f.pid = held.pid)), false),
               min(last - ((last - o) % {modulus})) FILTER (WHERE c = {first})
            INTO waiting, lowest FROM held;
        IF NOT waiting THEN
            safe := CASE WHEN lowest IS NULL THEN last ELSE least(last, lowest - 1) END;
            IF safe >= target OR clock_timestamp() >= deadline THEN
                RETURN safe;
            END IF;
        ELSIF clock_timestamp() >= deadline AND tries >= 200 THEN
            RETURN NULL;  -- a committer between registering and publishing (microseconds) for this long
        END IF;
        tries := tries + 1;
        PERFORM pg_sleep(0.0005);
    END LOOP;
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
    .replace("{registered}", str(REGISTERED))
    .replace("{first}", str(FIRST))
    .replace("{modulus}", str(_MODULUS))
)

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


def _pg_versions_function() -> str:
    """``volcanoweb_feed_versions(ids)``: write each changed row's ``resource_version`` (its last revision among
    the stamped entries ``ids``), one static statement per followed table (plans cached per session)."""
    branches = []
    for tracked in TRACKED:
        model = _model(tracked)
        if not any(f.column == "resource_version" for f in model._meta.concrete_fields):
            continue
        table = model._meta.db_table
        branches.append(
            f"IF t = '{table}' THEN\n"
            f'            UPDATE "{table}" AS x SET resource_version = e.rev FROM (SELECT obj_id, max(rev) AS rev '
            f"FROM feed_entry WHERE id = ANY(ids) AND tbl = '{table}' AND type <> 'D' GROUP BY obj_id) AS e "
            "WHERE x.id = e.obj_id;"
        )
    body = "\n        ELS".join(branches)
    return (
        "CREATE OR REPLACE FUNCTION volcanoweb_feed_versions(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$\n"
        "DECLARE\n    t text;\nBEGIN\n"
        "    FOR t IN SELECT DISTINCT tbl FROM feed_entry WHERE id = ANY(ids) AND type <> 'D' LOOP\n"
        f"        {body}\n        END IF;\n    END LOOP;\nEND\n$$"
    )


#: The revisions' sequence, never behind a revision already given (a log written before it existed).
_PG_SEQUENCE = (
    "CREATE SEQUENCE IF NOT EXISTS feed_rev",
    "SELECT setval('feed_rev', m) FROM (SELECT greatest(coalesce((SELECT max(rev) FROM feed_entry), 0), "
    "coalesce((SELECT max(rev) FROM feed_head), 0)) AS m) AS s, feed_rev "
    "WHERE m > (CASE WHEN feed_rev.is_called THEN feed_rev.last_value ELSE feed_rev.last_value - 1 END)",
)


def _pg_install(cursor: Any) -> None:
    for statement in _PG_SEQUENCE:
        cursor.execute(statement)
    for tracked in TRACKED:  # the foreign-key pre-locks of the head-lock stamp (before ADR 0029)
        cursor.execute(f"DROP FUNCTION IF EXISTS volcanoweb_feed_lock_{_model(tracked)._meta.db_table}()")
    cursor.execute(_pg_versions_function())
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
            for function in ("record()", "deferred()", "commit()", "stamp()", "frontier(int)", "versions(bigint[])"):
                cursor.execute(f"DROP FUNCTION IF EXISTS volcanoweb_feed_{function}")
            cursor.execute("DROP SEQUENCE IF EXISTS feed_rev")
