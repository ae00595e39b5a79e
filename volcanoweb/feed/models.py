"""The change log: one entry per committed create, update and delete of a served kind (ADR 0024).

``FeedEntry.rev`` is the revision (Kubernetes' ``resourceVersion``): strictly increasing in commit order and
without gaps; ``FeedHead`` holds the last revision given out and the compaction point. Entries are written by
database triggers (:mod:`volcanoweb.feed.triggers`), never by Python code, so every writer is covered.
"""

from __future__ import annotations

from django.db import models


class FeedEntry(models.Model):
    """One change of one object: its new row (``data``; the old row for a delete) and the old row (``prev``)."""

    rev = models.BigIntegerField(null=True, unique=True, help_text="null until the writing transaction commits")
    tbl = models.CharField(max_length=63)
    kind = models.CharField(max_length=40)
    obj_id = models.BigIntegerField()
    type = models.CharField(max_length=1, help_text="A (added), M (modified) or D (deleted)")
    namespace = models.CharField(max_length=253, blank=True, default="")
    name = models.CharField(max_length=253, blank=True, default="")
    uid = models.CharField(max_length=64, blank=True, default="")
    data = models.JSONField()
    prev = models.JSONField(null=True)
    at = models.DateTimeField()

    class Meta:
        db_table = "feed_entry"
        indexes = [
            models.Index(fields=["kind", "rev"], name="feed_entry_kind_rev"),
            models.Index(fields=["id"], condition=models.Q(rev__isnull=True), name="feed_entry_unstamped"),
        ]

    def __str__(self) -> str:
        return f"{self.rev} {self.type} {self.kind} {self.namespace}/{self.name}"


class FeedHead(models.Model):
    """The single row (id 1): the last revision given out and the compaction point (revisions ≤ it are gone)."""

    rev = models.BigIntegerField(default=0)
    compacted = models.BigIntegerField(default=0)

    class Meta:
        db_table = "feed_head"

    def __str__(self) -> str:
        return f"head {self.rev} (compacted {self.compacted})"
