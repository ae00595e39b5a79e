"""Admin for nodes (read-only mirror; fail/recover actions go through clusters.faults)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from volcanoweb.clusters import faults
from volcanoweb.clusters.models import Node, SimPod
from volcanoweb.core.errors import ApiError
from volcanoweb.tenancy.access import access_for


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    """Nodes as mirrored from the backend; actions inject failures into the simulated cluster."""

    list_display = ("name", "kind", "ready", "unschedulable", "updated_at")
    list_filter = ("kind", "ready", "unschedulable")
    search_fields = ("name",)
    readonly_fields = [f.name for f in Node._meta.fields]
    actions = ["fail_nodes", "recover_nodes"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Node | None = None) -> bool:
        return False

    @admin.action(description="Fail selected nodes (simulated cluster)")
    def fail_nodes(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:
        for node in queryset:
            try:
                faults.fail_node(access_for(request.user), node.name)
            except ApiError as exc:
                self.message_user(request, f"{node.name}: {exc.message}", messages.ERROR)

    @admin.action(description="Recover selected nodes (simulated cluster)")
    def recover_nodes(self, request: HttpRequest, queryset: QuerySet[Node]) -> None:
        for node in queryset:
            try:
                faults.recover_node(access_for(request.user), node.name)
            except ApiError as exc:
                self.message_user(request, f"{node.name}: {exc.message}", messages.ERROR)


@admin.register(SimPod)
class SimPodAdmin(admin.ModelAdmin):
    """The simulated cluster's pods (read-only)."""

    list_display = ("namespace", "name", "phase", "node_name", "exit_code", "reason")
    list_filter = ("phase",)
    search_fields = ("namespace", "name", "node_name")
    readonly_fields = [f.name for f in SimPod._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SimPod | None = None) -> bool:
        return False
