"""Forms: the queue editor (weight, guarantee, capability per main resource) and small action forms."""

from __future__ import annotations

from typing import Any

from django import forms

from scheduler.quantity import QuantityError, parse_resource
from volcanoweb.dashboard.resources import CPU, GPU, MEMORY
from volcanoweb.queues.models import Queue

FIELDS = (
    ("cpu", CPU, "CPU", "e.g. 16 or 500m"),
    ("memory", MEMORY, "Memory", "e.g. 64Gi"),
    ("gpu", GPU, "GPU", "e.g. 4"),
)


BINARY = (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def human_bytes(amount: int) -> str:
    """``68719476736`` -> ``64 GiB``; ``1536Mi`` -> ``1.5 GiB``; small amounts in bytes."""
    for unit, size in BINARY:
        if amount >= size:
            value = amount / size
            return f"{value:g} {unit}" if value == round(value, 2) else f"{value:.2f} {unit}"
    return f"{amount} byte{'s' if amount != 1 else ''}"


def unit_hint(name: str, value: str) -> tuple[str, str]:
    """What a quantity means once parsed, as Save will parse it: ("64 bytes — did you mean 64Gi?", "warn").

    Tones: "" (fine), "warn" (valid but probably not meant), "bad" (not a quantity).
    """
    value = (value or "").strip()
    if not value:
        return ("", "")
    try:
        amount = parse_resource(name, value)
    except (QuantityError, ValueError):
        return (f"{value!r} is not a quantity (e.g. {'64Gi' if name == MEMORY else '16 or 500m'})", "bad")
    if amount < 0:
        return ("must not be negative", "bad")
    if name == CPU:
        cores = amount / 1000
        text = f"{cores:g} CPU core{'s' if cores != 1 else ''}"
        return (f"{text} ({amount} millicores)" if amount % 1000 else text, "")
    if name == MEMORY:
        plain = value.replace(".", "", 1).isdigit()
        if plain and amount < 1024**2:  # a number without a unit is bytes in Kubernetes
            return (f"{human_bytes(amount)} \u2014 did you mean {value}Gi?", "warn")
        return (human_bytes(amount) if amount >= 1024 else f"{amount} bytes", "")
    return (f"{amount} GPU{'s' if amount != 1 else ''}", "")


def _quantity_field(label: str, hint: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        max_length=32,
        widget=forms.TextInput(attrs={"placeholder": hint, "inputmode": "text", "autocomplete": "off"}),
    )


class QueueEditForm(forms.Form):
    """Weight, guarantee and capability of a queue; quantities are Kubernetes strings, empty means unset."""

    weight = forms.IntegerField(min_value=1, max_value=65535, widget=forms.NumberInput(attrs={"inputmode": "numeric"}))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, _name, label, hint in FIELDS:
            self.fields[f"guarantee_{key}"] = _quantity_field(f"{label} guarantee", hint)
            self.fields[f"capability_{key}"] = _quantity_field(f"{label} capability", hint)

    @classmethod
    def for_queue(cls, queue: Queue) -> QueueEditForm:
        """Return the form filled with the queue's current values."""
        initial: dict[str, Any] = {"weight": queue.weight}
        for key, name, _label, _hint in FIELDS:
            initial[f"guarantee_{key}"] = (queue.guarantee or {}).get(name, "")
            initial[f"capability_{key}"] = (queue.capability or {}).get(name, "")
        return cls(initial=initial)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        for key, name, label, _hint in FIELDS:
            for kind in ("guarantee", "capability"):
                value = (data.get(f"{kind}_{key}") or "").strip()
                data[f"{kind}_{key}"] = value
                if not value:
                    continue
                try:
                    amount = parse_resource(name, value)
                except (QuantityError, ValueError):
                    self.add_error(f"{kind}_{key}", f"{value!r} is not a valid quantity")
                    continue
                if amount < 0:
                    self.add_error(f"{kind}_{key}", "must not be negative")
            g, c = data.get(f"guarantee_{key}"), data.get(f"capability_{key}")
            valid = not self.errors.get(f"guarantee_{key}") and not self.errors.get(f"capability_{key}")
            if g and c and valid and parse_resource(name, g) > parse_resource(name, c):
                self.add_error(f"guarantee_{key}", f"{label} guarantee exceeds capability")
        return data

    def _map(self, kind: str) -> dict[str, str]:
        return {
            name: self.cleaned_data[f"{kind}_{key}"]
            for key, name, _l, _h in FIELDS
            if self.cleaned_data.get(f"{kind}_{key}")
        }

    def changes(self, queue: Queue) -> dict[str, Any]:
        """Return the spec changes for ``queues.services.update_queue_spec`` (other resources are kept)."""
        shown = {name for _k, name, _l, _h in FIELDS}
        capability = {k: v for k, v in (queue.capability or {}).items() if k not in shown} | self._map("capability")
        guarantee = {k: v for k, v in (queue.guarantee or {}).items() if k not in shown} | self._map("guarantee")
        return {
            "weight": self.cleaned_data["weight"],
            "capability": capability,
            "guarantee": {"resource": guarantee} if guarantee else None,
        }

    def overrides(self) -> dict[str, Any]:
        """Return the parsed values for the what-if (scheduler units)."""
        return {
            "weight": self.cleaned_data["weight"],
            "capability": {n: parse_resource(n, v) for n, v in self._map("capability").items()},
            "guarantee": {n: parse_resource(n, v) for n, v in self._map("guarantee").items()},
        }

    def hints(self) -> dict[str, tuple[str, str]]:
        """field name -> (parsed meaning, tone) for every quantity field, from what was typed (or stored)."""
        out: dict[str, tuple[str, str]] = {}
        for key, name, _label, _hint in FIELDS:
            for kind in ("guarantee", "capability"):
                field = f"{kind}_{key}"
                raw = self.data.get(field) if self.is_bound else self.initial.get(field)
                text, tone = unit_hint(name, str(raw or ""))
                if not (raw or "").strip():
                    text = "no guarantee" if kind == "guarantee" else "unlimited"
                out[field] = (text, tone)
        return out

    def pairs(self) -> list[tuple[str, Any, Any]]:
        """Return (label, guarantee field, capability field) rows for the template."""
        return [(label, self[f"guarantee_{key}"], self[f"capability_{key}"]) for key, _n, label, _h in FIELDS]
