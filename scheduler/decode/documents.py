"""Multi-document YAML or JSON text → the objects it holds, each with its document number for errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from scheduler.decode.common import ManifestError


def load_manifests(text: str) -> list[tuple[int, Mapping[str, Any]]]:
    """Return ``(document index, object)`` for every object in multi-document YAML/JSON
    (``kind: List`` documents are expanded; empty documents skipped)."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ManifestError(0, "", "", f"invalid YAML{line}: {exc}") from None
    out: list[tuple[int, Mapping[str, Any]]] = []
    for i, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ManifestError(i, "", "", "expected a Kubernetes object (a mapping)")
        if doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list):
                raise ManifestError(i, "List", "items", "expected a list")
            for item in items:
                if not isinstance(item, Mapping):
                    raise ManifestError(i, "List", "items", "expected objects")
                out.append((i, item))
        else:
            out.append((i, doc))
    return out
