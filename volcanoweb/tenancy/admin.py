"""Admin for tenants, namespaces, memberships and API tokens; every write goes through tenancy.services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import BaseInlineFormSet
from django.http import HttpRequest

from volcanoweb.tenancy import services
from volcanoweb.tenancy.models import ApiToken, Membership, Namespace, Tenant


class NamespaceInline(admin.TabularInline):
    model = Namespace
    extra = 0
    fields = ("name", "labels", "annotations")


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("user", "role")
    autocomplete_fields = ("user",)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "display_name", "created_at")
    search_fields = ("name", "display_name")
    fields = ("name", "display_name", "description")
    inlines = [NamespaceInline, MembershipInline]

    def save_model(self, request: HttpRequest, obj: Tenant, form: Any, change: bool) -> None:
        services.save_tenant(request.user, obj)

    def save_formset(self, request: HttpRequest, form: Any, formset: BaseInlineFormSet, change: bool) -> None:
        instances = formset.save(commit=False)
        for deleted in formset.deleted_objects:
            if isinstance(deleted, Membership):
                services.remove_membership(deleted, actor=request.user)
            elif isinstance(deleted, Namespace):
                services.delete_namespace(request.user, deleted)
        for instance in instances:
            if isinstance(instance, Membership):
                services.set_membership(instance.tenant, instance.user, instance.role, actor=request.user)
            elif isinstance(instance, Namespace):
                services.save_namespace(request.user, instance)


@admin.register(Namespace)
class NamespaceAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "created_at")
    list_filter = ("tenant",)
    fields = ("name", "tenant", "labels", "annotations")
    search_fields = ("name",)

    def save_model(self, request: HttpRequest, obj: Namespace, form: Any, change: bool) -> None:
        services.save_namespace(request.user, obj)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("tenant", "role")
    fields = ("user", "tenant", "role")
    search_fields = ("user__username", "tenant__name")
    autocomplete_fields = ("user",)

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        services.set_membership(obj.tenant, obj.user, obj.role, actor=request.user)

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.remove_membership(obj, actor=request.user)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens: adding one shows the raw token once; only hashes are stored."""

    list_display = ("user", "name", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "prefix")
    fields = ("user", "name", "expires_at")
    autocomplete_fields = ("user",)
    actions = ["revoke"]

    def has_change_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        token, raw = services.create_token(obj.user, obj.name, expires_at=obj.expires_at, actor=request.user)
        obj.pk = token.pk
        messages.warning(request, f"Token for {obj.user}: {raw} (copy it now; it will not be shown again)")

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.revoke_token(token.user, token.pk, actor=request.user)
