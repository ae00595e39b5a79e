"""Read-only admin views of jobs, pods, PodGroups, priority classes, commands and events (writes go through the API)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from volcanoweb.jobs.models import Command, Event, Job, Pod, PodGroup, PriorityClass


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewing only: these objects change through services (API, controllers)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object | None = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("namespace", "name", "queue_name", "phase", "min_available", "created_at")
    list_filter = ("phase", "queue_name", "tenant")
    search_fields = ("name", "namespace")


@admin.register(PodGroup)
class PodGroupAdmin(ReadOnlyAdmin):
    list_display = ("namespace", "name", "queue_name", "phase", "min_member")
    list_filter = ("phase", "queue_name")
    search_fields = ("name",)


@admin.register(Pod)
class PodAdmin(ReadOnlyAdmin):
    list_display = ("namespace", "name", "phase", "node_name", "task_name", "exit_code")
    list_filter = ("phase",)
    search_fields = ("name", "node_name")


@admin.register(PriorityClass)
class PriorityClassAdmin(ReadOnlyAdmin):
    list_display = ("name", "value", "global_default", "preemption_policy")


@admin.register(Command)
class CommandAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "action", "target_kind", "target_namespace", "target_name", "consumed_at")
    list_filter = ("action", "target_kind")


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("last_timestamp", "type", "reason", "involved_kind", "involved_name", "count")
    list_filter = ("type", "involved_kind")
