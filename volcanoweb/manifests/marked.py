"""Mappings that remember the keys a document repeated (the YAML and JSON readers make them, strict field
validation and the Kubernetes API read them)."""

from __future__ import annotations

from typing import Any

__all__ = ["MarkedMapping", "duplicate_fields"]


class MarkedMapping(dict[str, Any]):
    """A parsed mapping that had repeated keys: ``duplicates`` names them (the last value was kept)."""

    duplicates: list[str]


def duplicate_fields(doc: Any) -> list[str]:
    """Return the paths of the keys given more than once in a parsed document (``spec.tasks[0].name``)."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            if isinstance(item, MarkedMapping):
                found.extend(f"{path}.{key}" if path else key for key in item.duplicates)
            stack.extend((child, f"{path}.{key}" if path else str(key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
    return sorted(found)
