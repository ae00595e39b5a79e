"""Read-only admin for the audit log."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from volcanoweb.audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_name", "tenant", "action", "kind", "object_key", "source")
    list_filter = ("kind", "action", "source", "tenant")
    search_fields = ("object_key", "actor_name", "message")
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False
