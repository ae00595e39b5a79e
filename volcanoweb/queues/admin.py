"""Admin for queues: edits go through queues.services (Volcano's and our hierarchical checks, audit)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from scheduler.quantity import QuantityError, parse_resource
from volcanoweb.core.errors import ApiError
from volcanoweb.queues import services
from volcanoweb.queues.models import ALLOWED_TENANTS_ANNOTATION, TENANT_ANNOTATION, Queue
from volcanoweb.tenancy.access import access_for
from volcanoweb.tenancy.models import Tenant

#: The resources edited one per field (like the dashboard's queue editor); others go in "Other (JSON)".
MAIN_RESOURCES = (
    ("cpu", "CPU", "e.g. 16 or 500m"),
    ("memory", "Memory", "e.g. 64Gi"),
    ("nvidia.com/gpu", "GPU", "e.g. 4"),
)


class ResourceListWidget(forms.MultiWidget):
    """One text box per main resource, plus a JSON box for any other resource."""

    template_name = "admin/queues/resource_list_widget.html"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        widgets = [forms.TextInput(attrs={"placeholder": hint, "size": 12}) for _name, _label, hint in MAIN_RESOURCES]
        widgets.append(forms.TextInput(attrs={"placeholder": '{"ephemeral-storage": "100Gi"}', "size": 30}))
        super().__init__(widgets, attrs)

    def decompress(self, value: Any) -> list[Any]:
        values = dict(value) if isinstance(value, dict) else {}
        main = [values.pop(name, "") for name, _label, _hint in MAIN_RESOURCES]
        return [*main, json.dumps(values) if values else ""]

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        labels = [label for _name, label, _hint in MAIN_RESOURCES] + ["Other (JSON)"]
        context["widget"]["labelled"] = list(zip(labels, context["widget"]["subwidgets"], strict=True))
        return context


class ResourceListField(forms.MultiValueField):
    """A ResourceList edited per resource (``cpu``, ``memory``, ``nvidia.com/gpu`` and other resources as JSON)."""

    widget = ResourceListWidget

    def __init__(self, **kwargs: Any) -> None:
        fields = [forms.CharField(required=False, max_length=32) for _ in MAIN_RESOURCES]
        fields.append(forms.CharField(required=False))
        super().__init__(fields, require_all_fields=False, **kwargs)

    def compress(self, data_list: list[Any]) -> dict[str, Any]:
        data_list = list(data_list or []) + [""] * (len(MAIN_RESOURCES) + 1)
        out: dict[str, Any] = {}
        other = (data_list[len(MAIN_RESOURCES)] or "").strip()
        if other:
            try:
                extra = json.loads(other)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(f"Other (JSON): not valid JSON: {exc.msg}") from None
            if not isinstance(extra, dict):
                raise forms.ValidationError('Other (JSON): expected an object such as {"ephemeral-storage": "100Gi"}')
            out.update(extra)
        for (name, label, _hint), raw in zip(MAIN_RESOURCES, data_list, strict=False):
            value = (raw or "").strip()
            if not value:
                continue
            try:
                parse_resource(name, value)
            except (QuantityError, ValueError):
                raise forms.ValidationError(f"{label}: {value!r} is not a valid quantity") from None
            out[name] = value
        return out


class QueueAdminForm(forms.ModelForm):
    """Edits a queue as a manifest; ``clean`` runs the service in a rolled-back transaction to show its errors."""

    capability = ResourceListField(required=False)
    deserved = ResourceListField(required=False)
    guarantee = ResourceListField(required=False, help_text="spec.guarantee.resource")
    allowed_tenants = forms.ModelMultipleChoiceField(queryset=Tenant.objects.all(), required=False)

    class Meta:
        model = Queue
        fields = (
            "name",
            "parent",
            "tenant",
            "allowed_tenants",
            "weight",
            "priority",
            "reclaimable",
            "capability",
            "deserved",
            "guarantee",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["allowed_tenants"] = list(self.instance.allowed_tenants.all())

    def manifest(self) -> dict[str, Any]:
        """Return the queue manifest the form describes."""
        data = self.cleaned_data
        spec: dict[str, Any] = dict(self.instance.spec or {}) if self.instance.pk else {}
        spec.update(
            {
                "weight": data.get("weight") or 1,
                "reclaimable": bool(data.get("reclaimable")),
                "priority": data.get("priority") or 0,
            }
        )
        for key in ("capability", "deserved"):
            spec.pop(key, None)
            if data.get(key):
                spec[key] = data[key]
        spec.pop("guarantee", None)
        if data.get("guarantee"):
            spec["guarantee"] = {"resource": data["guarantee"]}
        if data.get("parent") is not None:
            spec["parent"] = data["parent"].name
        annotations = dict(self.instance.annotations or {})
        annotations.pop(TENANT_ANNOTATION, None)
        annotations.pop(ALLOWED_TENANTS_ANNOTATION, None)
        if data.get("tenant") is not None:
            annotations[TENANT_ANNOTATION] = data["tenant"].name
        if data.get("allowed_tenants"):
            annotations[ALLOWED_TENANTS_ANNOTATION] = ",".join(t.name for t in data["allowed_tenants"])
        name = data.get("name") or self.instance.name
        metadata = {"name": name, "labels": dict(self.instance.labels or {}), "annotations": annotations}
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": metadata, "spec": spec}

    def validate_with(self, request: HttpRequest) -> None:
        """Run the apply in a transaction that is always rolled back, turning its errors into form errors."""
        try:
            with transaction.atomic():
                services.apply_queue(access_for(request.user), self.manifest(), source="admin")
                transaction.set_rollback(True)
        except ApiError as exc:
            for cause in exc.causes or []:
                self.add_error(None, f"{cause.field}: {cause.message}")
            if not exc.causes:
                self.add_error(None, exc.message)


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    form = QueueAdminForm
    list_display = ("name", "parent", "tenant", "state", "weight", "priority", "reclaimable")
    list_filter = ("state", "tenant")
    search_fields = ("name",)
    actions = ["open_queues", "close_queues"]

    def get_form(self, request: HttpRequest, obj: Queue | None = None, change: bool = False, **kwargs: Any) -> Any:
        form_class = super().get_form(request, obj, change=change, **kwargs)

        class RequestForm(form_class):  # type: ignore[misc, valid-type]  # a subclass of the form Django built
            def clean(self) -> dict[str, Any]:
                cleaned: dict[str, Any] = super().clean()
                if not self.errors:
                    self.validate_with(request)
                return cleaned

        return RequestForm

    def get_readonly_fields(self, request: HttpRequest, obj: Queue | None = None) -> tuple[str, ...]:
        return ("name",) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: Queue, form: QueueAdminForm, change: bool) -> None:
        outcome = services.apply_queue(access_for(request.user), form.manifest(), source="admin")
        saved = Queue.objects.get(name=outcome.name)
        obj.pk = saved.pk

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Allowed tenants were saved by the service (from the annotations)."""

    def delete_model(self, request: HttpRequest, obj: Queue) -> None:
        try:
            services.delete_queue(access_for(request.user), obj.name, source="admin")
        except ApiError as exc:
            messages.error(request, exc.message)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        for queue in queryset:
            self.delete_model(request, queue)

    @admin.action(description="Open selected queues")
    def open_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        for queue in queryset:
            try:
                services.open_queue(access_for(request.user), queue.name, source="admin")
            except ApiError as exc:
                messages.error(request, exc.message)

    @admin.action(description="Close selected queues")
    def close_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        for queue in queryset:
            try:
                services.close_queue(access_for(request.user), queue.name, source="admin")
            except ApiError as exc:
                messages.error(request, exc.message)
