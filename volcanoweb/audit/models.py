"""The audit log: one row per change made through a service."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from volcanoweb.tenancy.models import Tenant


class AuditEntry(models.Model):
    """Who changed what, when, with the object before and after (manifest-shaped JSON, null when absent)."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True, default="", help_text="kept if the user is deleted")
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=32, db_index=True, help_text="create, update, delete, command, open...")
    kind = models.CharField(max_length=40, db_index=True)
    object_key = models.CharField(max_length=320, help_text="namespace/name, or name when cluster-scoped")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=20, blank=True, default="api", help_text="api, admin, system...")
    message = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["kind", "object_key"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.kind} {self.object_key}"
