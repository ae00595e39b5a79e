"""Admin for the scheduler configuration: new versions are validated and saved by scheduling.services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from volcanoweb.core.errors import ApiError
from volcanoweb.scheduling import services
from volcanoweb.scheduling.models import SchedulerProfile
from volcanoweb.tenancy.access import access_for


class SchedulerProfileForm(forms.ModelForm):
    """A new version: YAML validated with the core's parse_config (errors name the path)."""

    class Meta:
        model = SchedulerProfile
        fields = ("yaml", "comment")
        widgets = {"yaml": forms.Textarea(attrs={"rows": 24, "cols": 100, "style": "font-family: monospace"})}

    def clean_yaml(self) -> str:
        text: str = self.cleaned_data["yaml"]
        try:
            services.validate_config(text)
        except ApiError as exc:
            raise forms.ValidationError(exc.message) from None
        return text


@admin.register(SchedulerProfile)
class SchedulerProfileAdmin(admin.ModelAdmin):
    """Versions are immutable: add a new one (it becomes active) or re-activate an old one."""

    form = SchedulerProfileForm
    list_display = ("version", "active", "comment", "created_by", "created_at")
    actions = ["activate"]

    def has_change_permission(self, request: HttpRequest, obj: SchedulerProfile | None = None) -> bool:
        return obj is None

    def save_model(self, request: HttpRequest, obj: SchedulerProfile, form: Any, change: bool) -> None:
        outcome = services.save_config(access_for(request.user), obj.yaml, comment=obj.comment, source="admin")
        obj.pk = SchedulerProfile.objects.get(version=outcome.object["version"]).pk

    @admin.action(description="Activate the selected version")
    def activate(self, request: HttpRequest, queryset: QuerySet[SchedulerProfile]) -> None:
        if queryset.count() != 1:
            messages.error(request, "Select exactly one version to activate.")
            return
        services.activate_version(access_for(request.user), queryset.get().version, source="admin")
