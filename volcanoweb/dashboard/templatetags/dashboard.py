"""Template helpers: resource formatting, percentages, phase colours, fragment URLs, sort links."""

from __future__ import annotations

from typing import Any

from django import template
from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString

from volcanoweb.dashboard.resources import fmt, percent, usable

register = template.Library()

PHASE_TONES = {
    "Pending": "wait",
    "Inqueue": "wait",
    "Restarting": "wait",
    "Aborting": "warn",
    "Aborted": "muted",
    "Running": "run",
    "Completing": "run",
    "Completed": "ok",
    "Succeeded": "ok",
    "Succeed": "ok",
    "Terminating": "warn",
    "Terminated": "muted",
    "Failed": "bad",
    "Unknown": "muted",
    "Open": "ok",
    "Closed": "muted",
    "Closing": "warn",
    "Normal": "muted",
    "succeeded": "ok",
    "running": "run",
    "failed": "bad",
    "Warning": "warn",
}


@register.filter
def res(amount: float | None, name: str) -> str:
    """``{{ amount|res:"cpu" }}`` → "4.5"."""
    return fmt(name, amount)


@register.filter
def deserved(amount: float | None, name: str) -> SafeString | str:
    """``{{ share|deserved:"nvidia.com/gpu" }}``: a deserved share as it can be used, whole GPUs where GPUs are
    whole (the water-filling's exact figure in the title when it has a fraction)."""
    whole = usable(name, amount)
    if whole is None or whole == amount:
        return fmt(name, amount)
    return format_html(
        '<span data-exact="{}" title="{} by the water-filling; pods ask whole GPUs, so {} can be used">{}</span>',
        fmt(name, amount),
        fmt(name, amount),
        fmt(name, whole),
        fmt(name, whole),
    )


@register.filter
def human(text: str) -> str:
    """``{{ event.message|human }}``: resource vectors in the units people read (see reasons.human_message)."""
    from volcanoweb.dashboard.reasons import human_message

    return human_message(str(text or ""))


@register.filter
def mark_bad(hint: Any) -> tuple[str, str]:
    """A unit hint shown as the reason a field is refused (tone "bad")."""
    text = hint[0] if hint else ""
    return (text, "bad")


@register.filter
def get(mapping: Any, key: str) -> Any:
    """``{{ dict|get:key }}``."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def ms(value: float | None) -> str:
    """``{{ run.duration_ms|ms }}`` → "12.3 ms", "1.24 s"; a dash when unknown."""
    if value is None:
        return "\u2013"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


@register.simple_tag
def pct(part: float | None, whole: float | None) -> int:
    """Return part/whole as a 0..100 integer."""
    return percent(part, whole)


@register.filter
def tone(phase: str) -> str:
    """Return the badge tone for a phase or state."""
    return PHASE_TONES.get(str(phase), "muted")


@register.simple_tag(takes_context=True)
def fragment_url(context: Any, name: str) -> str:
    """Return the current URL with ``fragment=<name>`` (other query parameters kept)."""
    request = context["request"]
    query = request.GET.copy()
    query["fragment"] = name
    return f"{request.path}?{query.urlencode()}"


@register.simple_tag(takes_context=True)
def query_with(context: Any, **changes: Any) -> str:
    """Return the current query string with some parameters replaced (None or "" removes)."""
    query: QueryDict = context["request"].GET.copy()
    query.pop("fragment", None)
    for key, value in changes.items():
        if value in (None, ""):
            query.pop(key, None)
        else:
            query[key] = str(value)
    return f"?{query.urlencode()}" if query else "?"


@register.simple_tag(takes_context=True)
def sort_link(context: Any, key: str) -> str:
    """Return the query string that sorts by ``key``, toggling direction when already sorted by it."""
    current = context.get("sort", "")
    new = f"-{key}" if current == key else key
    return query_with(context, sort=new, page=None)


@register.simple_tag(takes_context=True)
def sort_state(context: Any, key: str) -> str:
    """Return aria-sort for a column header."""
    current = context.get("sort", "")
    if current == key:
        return "ascending"
    if current == f"-{key}":
        return "descending"
    return "none"
