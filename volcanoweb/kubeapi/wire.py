"""Kubernetes' protobuf request bodies, read: ``kubectl auth can-i`` posts its SelfSubjectAccessReview as
``application/vnd.kubernetes.protobuf`` (kubectl's typed clients send built-in kinds that way).

The body is the magic ``k8s\\x00`` and a ``runtime.Unknown`` (``typeMeta`` 1 with apiVersion 1 and kind 2,
``raw`` 2); ``raw`` is the object's own message. The answer is JSON, which the client also accepts.
"""

from __future__ import annotations

from typing import Any

from volcanoweb.core.errors import BadRequest

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


def fields(data: bytes) -> list[tuple[int, Any]]:
    """Decode one protobuf message without its schema: ``[(field number, int | bytes)]``."""
    out: list[tuple[int, Any]] = []
    at = 0

    def varint() -> int:
        nonlocal at
        shift = value = 0
        while True:
            if at >= len(data) or shift > 63:
                raise BadRequest("the protobuf body is truncated")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 1:
            out.append((number, data[at : at + 8]))
            at += 8
        elif wire == 2:
            size = varint()
            if at + size > len(data):
                raise BadRequest("the protobuf body is truncated")
            out.append((number, data[at : at + size]))
            at += size
        elif wire == 5:
            out.append((number, data[at : at + 4]))
            at += 4
        else:
            raise BadRequest(f"the protobuf body has an unsupported wire type {wire}")
    return out


def strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    """The string fields of a message, by name."""
    return {names[n]: v.decode("utf-8", "replace") for n, v in fields(data) if n in names and isinstance(v, bytes)}


def message(data: bytes, number: int) -> bytes | None:
    """The first embedded message (or bytes) with that field number."""
    return next((v for n, v in fields(data) if n == number and isinstance(v, bytes)), None)


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """Return ``(apiVersion, kind, raw)`` of a Kubernetes protobuf body."""
    if not body.startswith(MAGIC):
        raise BadRequest("a Kubernetes protobuf body starts with k8s\\x00")
    unknown = body[len(MAGIC) :]
    type_meta = strings(message(unknown, 1) or b"", {1: "apiVersion", 2: "kind"})
    return type_meta.get("apiVersion", ""), type_meta.get("kind", ""), message(unknown, 2) or b""


_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}


def access_review(raw: bytes) -> dict[str, Any]:
    """A SelfSubjectAccessReview's message as its JSON form (``spec`` with resource or non-resource attributes)."""
    spec_bytes = message(raw, 2) or b""
    spec: dict[str, Any] = {}
    resource = message(spec_bytes, 1)
    if resource is not None:
        spec["resourceAttributes"] = strings(resource, _RESOURCE_ATTRIBUTES)
    non_resource = message(spec_bytes, 2)
    if non_resource is not None:
        spec["nonResourceAttributes"] = strings(non_resource, {1: "path", 2: "verb"})
    return {"metadata": {}, "spec": spec}
