"""Reading the change log: the head, the changes after a revision, rows as of a revision, and compaction.

Every consumer reads the log the same way: ``head()`` for the revision a read is consistent with,
``changes(after, kinds)`` for what happened since (in revision order, nothing merged), ``instance()`` to turn
an entry's row back into a model instance that the kind's renderer turns into a manifest. ``compact()``
drops entries older than the retention window; a read from a revision at or below the compaction point is
410 Gone (:class:`Expired`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils.dateparse import parse_datetime

from volcanoweb.core.errors import ApiError
from volcanoweb.feed.tables import BY_KIND

#: The most entries one read returns.
BATCH = 1000
#: Milliseconds a consistent read waits for the transactions committing when it starts (PostgreSQL).
WAIT_MS = 2000
ADDED, MODIFIED, DELETED = "A", "M", "D"


class Expired(ApiError):
    """410: a read from a revision the log no longer keeps (Kubernetes' ``Expired``)."""

    code = 410
    reason = "Expired"


@dataclass
class Change:
    """One entry: the change of one object at one revision (``data`` = the row after; before, for a delete).

    The rows come from the database as JSON text and are decoded on first use: a process reads every entry
    once, but most readers look at a few kinds only.
    """

    rev: int
    kind: str
    obj_id: int
    type: str
    namespace: str
    name: str
    uid: str
    #: the row after the change (before, for a delete): a dict, or its JSON text until first read
    raw_data: dict[str, Any] | str
    #: the row before the change (None for a create): a dict, or its JSON text until first read
    raw_prev: dict[str, Any] | str | None
    #: when the change was written (epoch seconds)
    at: float = 0.0
    #: rendered manifests, filled once per process by whoever needs them first (see ``manifest``)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> dict[str, Any]:
        raw = self.raw_data
        if isinstance(raw, str):
            raw = json.loads(raw)
            if self.type != DELETED and "resource_version" in raw:
                raw["resource_version"] = self.rev  # PostgreSQL gives the revision at commit, after the entry
            self.raw_data = raw
        return raw

    @property
    def prev(self) -> dict[str, Any] | None:
        raw = self.raw_prev
        if isinstance(raw, str):
            raw = self.raw_prev = json.loads(raw)
        return raw if isinstance(raw, dict) else None

    @property
    def before(self) -> dict[str, Any] | None:
        """The row before the change (None for a create)."""
        if self.type == DELETED:
            return self.data
        return self.prev

    @property
    def after(self) -> dict[str, Any] | None:
        """The row after the change (None for a delete)."""
        return None if self.type == DELETED else self.data


def _epoch(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):  # SQLite's text
        return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()
    return 0.0


def _change(row: tuple[Any, ...]) -> Change:
    rev, kind, obj_id, type_, namespace, name, uid, data, prev, at = row
    return Change(int(rev), kind, int(obj_id), type_, namespace, name, uid, data, prev, _epoch(at))


#: The last frontier this process read, per database (PostgreSQL; see :func:`_frontier`).
_known: dict[str, int] = {}


def _frontier(wait: bool) -> int:
    """PostgreSQL: the highest revision at or below which every revision's transaction has committed or rolled
    back.

    Revisions are taken at commit from a sequence, side by side, so a later revision may be visible before an
    earlier one (ADR 0029): readers read up to this frontier, never past it. ``wait``: first wait (briefly) for
    the transactions committing now, so that a read after a write sees the write. When a committer stays
    between taking its revisions and publishing them (microseconds, unless its process is descheduled) the
    last frontier read stands: an earlier safe revision stays safe.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT volcanoweb_feed_frontier(%s)", [WAIT_MS if wait else 0])
        row = cursor.fetchone()
    name = str(connection.settings_dict.get("NAME"))
    if row and row[0] is not None:
        _known[name] = int(row[0])
    return _known.get(name, 0)


def head(*, wait: bool = False) -> tuple[int, int]:
    """Return ``(revision, compacted)``: the revision every read is consistent with, and the compaction point.

    SQLite gives revisions at write under its one writer, so the last one given is committed. PostgreSQL's
    revision is the frontier (:func:`_frontier`); ``wait`` makes a read see the writes that completed before it.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT rev, compacted FROM feed_head WHERE id = 1")
        row = cursor.fetchone()
    current, compacted = (int(row[0]), int(row[1])) if row else (0, 0)
    if connection.vendor == "postgresql":
        current = _frontier(wait)
    return current, compacted


def revision() -> int:
    """The revision every read is consistent with (``head()[0]``) in one statement: what a page reads before its
    view, for its socket to start from."""
    return _frontier(False) if connection.vendor == "postgresql" else head()[0]  # head(): one read on SQLite


def latest() -> int:
    """The last revision taken, committed or not (one cheap read: a poller's "anything new?")."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM feed_rev")
        else:
            cursor.execute("SELECT rev FROM feed_head WHERE id = 1")
        row = cursor.fetchone()
    return int(row[0]) if row else -1


def check(rev: int, compacted: int | None = None) -> None:
    """Raise :class:`Expired` when ``rev`` is older than the log keeps (the changes after it are gone)."""
    if compacted is None:
        compacted = head()[1]
    if rev < compacted:
        raise Expired(f"too old resource version: {rev} ({compacted})")


def changes(
    after: int, kinds: Collection[str] | None = None, *, limit: int = BATCH, upto: int | None = None
) -> list[Change]:
    """Return the committed changes with a revision above ``after`` (and at most ``upto``), oldest first.

    Plain SQL: the rows' JSON stays text until a reader looks at it (:class:`Change`)."""
    where: list[str] = ["rev > %s"]
    params: list[Any] = [after]
    if upto is not None:
        where.append("rev <= %s")
        params.append(upto)
    if kinds is not None:
        wanted = list(kinds)
        if not wanted:
            return []
        where.append(f"kind IN ({', '.join(['%s'] * len(wanted))})")
        params.extend(wanted)
    text = "::text" if connection.vendor == "postgresql" else ""
    sql = (
        f"SELECT rev, kind, obj_id, type, namespace, name, uid, data{text}, prev{text}, at FROM feed_entry "
        f"WHERE {' AND '.join(where)} ORDER BY rev LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return [_change(row) for row in cursor.fetchall()]


def iter_changes(after: int, until: int, kinds: Collection[str] | None = None) -> Iterator[Change]:
    """Yield every change in ``(after, until]``, in batches."""
    while after < until:
        batch = [c for c in changes(after, kinds) if c.rev <= until]
        if not batch:
            return
        yield from batch
        after = batch[-1].rev
        if len(batch) < BATCH and after < until:
            return


def model_of(kind: str) -> type[models.Model]:
    """The model of a log kind."""
    return django_apps.get_model(BY_KIND[kind].model)


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def instance(kind: str, data: dict[str, Any]) -> Any:
    """Return an unsaved model instance holding the row ``data`` of an entry (as the row was then)."""
    model = model_of(kind)
    values: dict[str, Any] = {}
    for f in model._meta.concrete_fields:
        if f.column not in data:
            continue
        raw = data[f.column]
        if isinstance(f, models.JSONField):
            value = raw
        elif isinstance(f, models.DateTimeField):
            value = _aware(parse_datetime(raw)) if isinstance(raw, str) else raw
        elif raw is None:
            value = None
        else:
            value = f.to_python(raw)
        values[f.attname] = value
    obj = model(**values)
    obj._state.adding = False
    return obj


def retention() -> tuple[int, timedelta]:
    """Return the retention window: at least this many entries, for at least this long (settings)."""
    return int(settings.FEED_RETENTION_ENTRIES), timedelta(seconds=float(settings.FEED_RETENTION_SECONDS))


def compact(now: datetime | None = None) -> int:
    """Drop the entries outside the retention window; return the new compaction point.

    An entry goes once it is both older than ``FEED_RETENTION_SECONDS`` and more than
    ``FEED_RETENTION_ENTRIES`` revisions behind the head (so a quiet log keeps its recent history and a
    busy one keeps at least the last minutes).
    """
    from volcanoweb.feed.models import FeedEntry, FeedHead

    keep, window = retention()
    cutoff = (now or datetime.now(tz=UTC)) - window
    with transaction.atomic():
        current, compacted = head()
        by_count = current - keep
        old = FeedEntry.objects.filter(rev__lte=by_count, at__lt=cutoff).order_by("-rev").values_list("rev", flat=True)
        point = old.first()
        if point is None or point <= compacted:
            return compacted
        FeedEntry.objects.filter(rev__lte=point).delete()
        FeedHead.objects.filter(id=1).update(compacted=point)
    return int(point)


def _by_manifest_kind() -> dict[str, type[models.Model]]:
    out: dict[str, type[models.Model]] = {}
    for tracked in BY_KIND.values():
        model = django_apps.get_model(tracked.model)
        if any(f.name == "uid" for f in model._meta.concrete_fields):
            out[model.__name__] = model  # a manifest's kind is its model's name (Job, PodGroup, Queue, ...)
    return out


def restamp(manifests: list[dict[str, Any]]) -> None:
    """Give written objects (in an API's answer) the ``resourceVersion`` their commit stamped.

    On PostgreSQL a revision is given at commit, after the service rendered its answer from the row as it
    was; the answer must carry the revision a client sends back on its next update. One query per kind.
    """
    wanted: dict[type[models.Model], dict[str, dict[str, Any]]] = {}
    kinds = _by_manifest_kind()
    for manifest in manifests:
        meta = manifest.get("metadata") if isinstance(manifest, dict) else None
        model = kinds.get(str(manifest.get("kind"))) if isinstance(meta, dict) else None
        if model is None or not isinstance(meta, dict) or not meta.get("uid"):
            continue
        wanted.setdefault(model, {})[str(meta["uid"])] = meta
    for model, metas in wanted.items():
        try:
            rows = model.objects.filter(uid__in=list(metas)).values_list("uid", "resource_version")  # type: ignore[attr-defined]
            found = {str(uid): version for uid, version in rows}
        except (ValueError, ValidationError):  # a synthetic uid ("event-7"): not a row's
            continue
        for uid, meta in metas.items():
            if uid in found:
                meta["resourceVersion"] = str(found[uid])
