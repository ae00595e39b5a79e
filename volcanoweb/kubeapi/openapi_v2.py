"""``/openapi/v2`` as a modern kube-apiserver serves it: JSON, or the protobuf kubectl asks for.

kubectl downloads ``/openapi/v2`` with ``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``
(only that type) for client-side validation, when the v3 document has no PATCH operation with
``fieldValidation`` for a kind: a Command, or a kind the server does not serve (kubectl then reports
``no matches for kind``). The protobuf is gnostic's ``openapi.v2.Document``; this module writes the fields
the Swagger 2.0 document here uses, with the wire format's three encodings (varint, 64-bit, length-delimited).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import yaml
from django.http import HttpResponse
from rest_framework.exceptions import NotAcceptable
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from volcanoweb.kubeapi import openapi
from volcanoweb.kubeapi.base import KubeView

#: What kubectl asks for; the answer's Content-Type spells it with a dot (``@`` is not a token character, so
#: Go's ``mime.ParseMediaType`` would refuse the response), as kube-apiserver does.
PROTOBUF_TYPES = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
PROTOBUF = PROTOBUF_TYPES[1]

Encoder = Callable[[Any], bytes]


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _message(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def _string(number: int, value: Any) -> bytes:
    return _message(number, str(value).encode()) if value not in (None, "") else b""


def _strings(number: int, values: Any) -> bytes:
    return b"".join(_string(number, v) for v in values or [])


def _bool(number: int, value: Any) -> bytes:
    return _key(number, 0) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _key(number, 0) + _varint(int(value)) if value is not None else b""


def _double(number: int, value: Any) -> bytes:
    return _key(number, 1) + struct.pack("<d", float(value)) if value is not None else b""


def _any(value: Any) -> bytes:
    """gnostic ``Any``: the value as YAML (field 2)."""
    return _string(2, yaml.safe_dump(value, default_flow_style=True).strip())


def _extensions(number: int, obj: dict[str, Any]) -> bytes:
    """``repeated NamedAny vendor_extension``: every ``x-`` key."""
    return b"".join(
        _message(number, _string(1, key) + _message(2, _any(value)))
        for key, value in obj.items()
        if key.startswith("x-")
    )


def schema(value: dict[str, Any]) -> bytes:
    """gnostic ``Schema``."""
    out = _string(1, value.get("$ref")) + _string(2, value.get("format")) + _string(3, value.get("title"))
    out += _string(4, value.get("description"))
    if "default" in value:
        out += _message(5, _any(value["default"]))
    out += _double(7, value.get("maximum")) + _double(9, value.get("minimum"))
    out += _int(11, value.get("maxLength")) + _int(12, value.get("minLength")) + _string(13, value.get("pattern"))
    out += _strings(19, value.get("required"))
    out += b"".join(_message(20, _any(item)) for item in value.get("enum") or [])
    extra = value.get("additionalProperties")
    if isinstance(extra, dict):
        out += _message(21, _message(1, schema(extra)))
    elif isinstance(extra, bool):
        out += _message(21, _bool(2, extra) or _key(2, 0) + b"\x00")
    kind = value.get("type")
    if kind:
        out += _message(22, _strings(1, kind if isinstance(kind, list) else [kind]))
    items = value.get("items")
    if isinstance(items, dict):
        out += _message(23, _message(1, schema(items)))
    out += b"".join(_message(24, schema(part)) for part in value.get("allOf") or [])
    properties = value.get("properties") or {}
    if properties:
        out += _message(
            25, b"".join(_message(1, _string(1, k) + _message(2, schema(v))) for k, v in properties.items())
        )
    out += _bool(27, value.get("readOnly"))
    return out + _extensions(31, value)


def _parameter(value: dict[str, Any]) -> bytes:
    """gnostic ``ParametersItem`` → ``Parameter`` (a body, or a query/path/header parameter)."""
    where = value.get("in")
    if where == "body":
        body = _string(1, value.get("description")) + _string(2, value.get("name")) + _string(3, where)
        body += _bool(4, value.get("required")) + _message(5, schema(value.get("schema") or {}))
        return _message(1, _message(1, body + _extensions(6, value)))
    common = _bool(1, value.get("required")) + _string(2, where) + _string(3, value.get("description"))
    common += _string(4, value.get("name"))
    if where == "path":
        sub = common + _string(5, value.get("type")) + _string(6, value.get("format")) + _extensions(22, value)
        field = 4
    elif where == "header":
        sub = common + _string(5, value.get("type")) + _string(6, value.get("format")) + _extensions(22, value)
        field = 1
    else:  # query (and formData, not used here)
        sub = common + _bool(5, value.get("allowEmptyValue")) + _string(6, value.get("type"))
        sub += _string(7, value.get("format")) + _bool(20, value.get("uniqueItems")) + _extensions(23, value)
        field = 3 if where == "query" else 2
    return _message(1, _message(2, _message(field, sub)))


def _operation(value: dict[str, Any]) -> bytes:
    out = _strings(1, value.get("tags")) + _string(2, value.get("summary")) + _string(3, value.get("description"))
    out += (
        _string(5, value.get("operationId")) + _strings(6, value.get("produces")) + _strings(7, value.get("consumes"))
    )
    out += b"".join(_message(8, _parameter(p)) for p in value.get("parameters") or [])
    responses = b""
    for code, response in (value.get("responses") or {}).items():
        body = _string(1, response.get("description"))
        if isinstance(response.get("schema"), dict):
            body += _message(2, _message(1, schema(response["schema"])))
        responses += _message(1, _string(1, code) + _message(2, _message(1, body)))
    out += _message(9, responses) if responses else b""
    out += _strings(10, value.get("schemes")) + _bool(11, value.get("deprecated"))
    return out + _extensions(13, value)


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(value: dict[str, Any]) -> bytes:
    out = b"".join(_message(number, _operation(value[verb])) for verb, number in _VERBS.items() if verb in value)
    out += b"".join(_message(9, _parameter(p)) for p in value.get("parameters") or [])
    return out + _extensions(10, value)


def document(value: dict[str, Any]) -> bytes:
    """Encode a Swagger 2.0 document (a dict) as gnostic's ``openapi.v2.Document``."""
    info = value.get("info") or {}
    out = _string(1, value.get("swagger"))
    out += _message(
        2, _string(1, info.get("title")) + _string(2, info.get("version")) + _string(3, info.get("description"))
    )
    out += _string(3, value.get("host")) + _string(4, value.get("basePath")) + _strings(5, value.get("schemes"))
    out += _strings(6, value.get("consumes")) + _strings(7, value.get("produces"))
    paths = b"".join(
        _message(2, _string(1, k) + _message(2, _path_item(v))) for k, v in (value.get("paths") or {}).items()
    )
    out += _message(8, paths)
    definitions = value.get("definitions") or {}
    out += _message(9, b"".join(_message(1, _string(1, k) + _message(2, schema(v))) for k, v in definitions.items()))
    return out + _extensions(16, value)


def v2_for_swagger(doc: dict[str, Any]) -> dict[str, Any]:
    """Return the v2 document with the v3-only schema keywords rewritten (``anyOf`` of an int-or-string)."""

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("x-kubernetes-int-or-string"):
                return {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": True}
            return {k: fix(v) for k, v in node.items() if k != "anyOf"}
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    out: dict[str, Any] = fix(doc)
    return out


def wants_protobuf(accept: str) -> bool:
    """Return True when ``Accept`` names the protobuf document (before any JSON type)."""
    for media_range in accept.split(","):
        kind = media_range.split(";")[0].strip().lower()
        if kind in PROTOBUF_TYPES:
            return True
        if kind in ("application/json", "*/*"):
            return False
    return False


class OpenAPIV2View(KubeView):
    """``/openapi/v2``: Swagger 2.0 as JSON, or as protobuf for ``Accept: application/com.github.proto-openapi...``."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        try:
            return super().perform_content_negotiation(request, force)
        except NotAcceptable:
            if not wants_protobuf(request.headers.get("Accept", "")):
                raise
            renderer = JSONRenderer()  # for an error body; the document itself is written below
            return renderer, renderer.media_type

    def get(self, request: Request) -> Response | HttpResponse:
        doc = v2_for_swagger(openapi.v2_document())
        if wants_protobuf(request.headers.get("Accept", "")):
            response = HttpResponse(document(doc), content_type=PROTOBUF)
        else:
            response = Response(doc)
        response["Vary"] = "Accept"
        return response
