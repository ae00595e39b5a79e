"""PATCH bodies as Kubernetes reads them: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and apply patches.

Strategic merge patch is read as a JSON merge patch (the Volcano kinds are custom resources, for which
Kubernetes itself refuses strategic merge; PriorityClass has no list fields it would merge by key).
"""

from __future__ import annotations

import copy
from typing import Any

from volcanoweb.core.errors import BadRequest, Cause

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE, JSON_PATCH, STRATEGIC, APPLY)


class UnsupportedMediaType(BadRequest):
    """415: a PATCH with a content type that is not one of :data:`PATCH_TYPES`."""

    code = 415
    reason = "UnsupportedMediaType"


def merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` with the RFC 7386 merge ``patch`` applied (null deletes a key)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _bad(index: int, message: str) -> BadRequest:
    return BadRequest(
        f"the JSON patch cannot be applied: operation {index}: {message}",
        causes=[Cause(f"[{index}]", message, "FieldValueInvalid")],
    )


# ``path`` is the operation's value as sent: _parent checks that it is a pointer, the others only quote it.
def _parent(doc: Any, path: object, index: int) -> tuple[Any, str]:
    if not isinstance(path, str) or not path.startswith("/"):
        raise _bad(index, f"path must be a JSON pointer starting with '/', got {path!r}")
    tokens = [_unescape(t) for t in path[1:].split("/")]
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise _bad(index, f"path {path!r} does not exist")
    return node, tokens[-1]


def _get(node: Any, key: str, path: object, index: int) -> Any:
    if isinstance(node, dict) and key in node:
        return node[key]
    if isinstance(node, list) and key.isdigit() and int(key) < len(node):
        return node[int(key)]
    raise _bad(index, f"path {path!r} does not exist")


def _remove(node: Any, key: str, path: object, index: int) -> Any:
    value = _get(node, key, path, index)
    if isinstance(node, dict):
        del node[key]
    else:
        del node[int(key)]
    return value


def _add(node: Any, key: str, value: Any, path: object, index: int) -> None:
    if isinstance(node, dict):
        node[key] = value
    elif isinstance(node, list):
        if key == "-":
            node.append(value)
        elif key.isdigit() and int(key) <= len(node):
            node.insert(int(key), value)
        else:
            raise _bad(index, f"index {key!r} is out of range in {path!r}")
    else:
        raise _bad(index, f"cannot add below a scalar at {path!r}")


def json_patch(target: Any, operations: Any) -> Any:
    """Return ``target`` with the RFC 6902 ``operations`` applied (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise BadRequest("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for index, op in enumerate(operations):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise _bad(index, "each operation must be an object with 'op' and 'path'")
        kind, path = op["op"], op.get("path")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _bad(index, f"'{kind}' needs a 'value'")
        if path == "" and kind in ("add", "replace"):
            doc = copy.deepcopy(op["value"])
            continue
        node, key = _parent(doc, path, index)
        if kind == "add":
            _add(node, key, copy.deepcopy(op["value"]), path, index)
        elif kind == "remove":
            _remove(node, key, path, index)
        elif kind == "replace":
            _get(node, key, path, index)
            if isinstance(node, dict):
                node[key] = copy.deepcopy(op["value"])
            else:
                node[int(key)] = copy.deepcopy(op["value"])
        elif kind == "test":
            if _get(node, key, path, index) != op["value"]:
                raise _bad(index, f"test failed: the value at {path!r} is not the expected one")
        elif kind in ("move", "copy"):
            source = op.get("from")
            src_node, src_key = _parent(doc, source, index)
            value = (
                _remove(src_node, src_key, source, index)
                if kind == "move"
                else copy.deepcopy(_get(src_node, src_key, source, index))
            )
            node, key = _parent(doc, path, index)
            _add(node, key, value, path, index)
        else:
            raise _bad(index, f"unsupported op {kind!r}")
    return doc
