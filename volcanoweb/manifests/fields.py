"""Field-level checks shared by the kinds: types, names, quantities, metadata, with Kubernetes wording."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from scheduler.quantity import QuantityError, is_byte_resource, parse_quantity, parse_resource
from volcanoweb.core.errors import Errors

DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

#: Limits of ours (besides MAX_MANIFEST_BYTES for the body).
MAX_TASKS = 100
MAX_REPLICAS = 10_000
MAX_POLICIES = 50
MAX_METADATA_BYTES = 256 * 1024
MAX_LABELS = 64

#: The largest amount the scheduler holds in its unit (millicores, bytes, counts): a signed 64-bit integer,
#: Kubernetes' own bound for a quantity's value.
MAX_QUANTITY = 2**63 - 1
#: Quantities finer than 1n (Kubernetes' finest scale) are refused: they would be silently rounded up.

#: Fields the server sets; accepted on input (so a GET output re-applies) and ignored.
SERVER_METADATA = frozenset(
    {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp"}
)
KNOWN_METADATA = SERVER_METADATA | {
    "name",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "generateName",
}

_TYPE_NAMES = {dict: "object", list: "array", str: "string", int: "integer", bool: "boolean", float: "number"}


def type_name(value: Any) -> str:
    """Return the JSON type name of a value."""
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """Return a value as Kubernetes prints it in ``Invalid value: ...``."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return f'"{type_name(value)}"'


def expect(errors: Errors, path: str, value: Any, kind: type | tuple[type, ...], type_label: str) -> bool:
    """Check a value's JSON type; record ``must be of type <t>`` and return False when it is wrong."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok:
        errors.add(
            path, f"Invalid value: {show(value)}: {path} in body must be of type {type_label}", "FieldValueTypeInvalid"
        )
    return ok


def get_map(errors: Errors, obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """Return ``obj[key]`` when it is a mapping (absent/null gives {}); record a type error otherwise."""
    value = obj.get(key)
    if value is None:
        return {}
    return value if expect(errors, path, value, dict, "object") else {}


def get_list(errors: Errors, obj: dict[str, Any], key: str, path: str) -> list[Any]:
    """Return ``obj[key]`` when it is a list (absent/null gives [])."""
    value = obj.get(key)
    if value is None:
        return []
    return value if expect(errors, path, value, list, "array") else []


def get_int(errors: Errors, obj: dict[str, Any], key: str, path: str, minimum: int | None = None) -> int | None:
    """Return an optional integer field; record type and lower-bound errors."""
    value = obj.get(key)
    if value is None:
        return None
    if not expect(errors, path, value, int, "integer"):
        return None
    if not -(2**31) <= value < 2**31:
        errors.add(path, f"Invalid value: {value}: {path} in body must be a 32-bit integer")
        return None
    if minimum is not None and value < minimum:
        errors.add(path, f"Invalid value: {value}: {path} in body should be greater than or equal to {minimum}")
    return int(value)


def get_str(errors: Errors, obj: dict[str, Any], key: str, path: str) -> str | None:
    """Return an optional string field; record a type error otherwise."""
    value = obj.get(key)
    if value is None:
        return None
    return value if expect(errors, path, value, str, "string") else None


def get_bool(errors: Errors, obj: dict[str, Any], key: str, path: str) -> bool | None:
    """Return an optional boolean field; record a type error otherwise."""
    value = obj.get(key)
    if value is None:
        return None
    return value if expect(errors, path, value, bool, "boolean") else None


def check_enum(errors: Errors, path: str, value: Any, allowed: tuple[str, ...]) -> None:
    """Record ``Unsupported value`` when value is not one of the allowed strings."""
    if value not in allowed:
        supported = ", ".join(json.dumps(a) for a in allowed)
        errors.add(path, f"Unsupported value: {show(value)}: supported values: {supported}", "FieldValueNotSupported")


def check_dns_label(errors: Errors, path: str, value: str, max_length: int = 63) -> None:
    """Record the Kubernetes RFC 1123 label errors for a name."""
    if len(value) > max_length:
        errors.add(
            path, f"Invalid value: {show(value)}: must be no more than {max_length} characters", "FieldValueTooLong"
        )
    if not DNS1123_LABEL_RE.match(value):
        errors.add(path, f"Invalid value: {show(value)}: {DNS1123_LABEL_MSG}")


def check_dns_subdomain(errors: Errors, path: str, value: str) -> None:
    """Record the Kubernetes RFC 1123 subdomain errors for a name."""
    if len(value) > 253:
        errors.add(path, f"Invalid value: {show(value)}: must be no more than 253 characters", "FieldValueTooLong")
    if not DNS1123_SUBDOMAIN_RE.match(value):
        errors.add(path, f"Invalid value: {show(value)}: {DNS1123_SUBDOMAIN_MSG}")


QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def qualified_name_problem(name: str) -> str | None:
    """Kubernetes' ``IsQualifiedName`` (resource names such as ``cpu``, ``nvidia.com/gpu``, ``requests.cpu``):
    the reason ``name`` is not one, or None."""
    if name.count("/") > 1:
        return (
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')"
        )
    prefix, slash, local = name.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN_RE.match(prefix)):
        return f"prefix part {DNS1123_SUBDOMAIN_MSG}"
    if not local:
        return "name part must be non-empty"
    if len(local) > 63:
        return "name part must be no more than 63 characters"
    if not QUALIFIED_NAME_RE.match(local):
        return QUALIFIED_NAME_MSG
    return None


def check_resource_list(errors: Errors, path: str, value: Any) -> dict[str, int]:
    """Check a ResourceList (name → quantity); return it in scheduler units (cpu millicores, bytes, counts)."""
    parsed: dict[str, int] = {}
    if value is None:
        return parsed
    if not expect(errors, path, value, dict, "object"):
        return parsed
    for name, quantity in value.items():
        item = f"{path}[{name}]"
        if not isinstance(name, str) or not name:
            errors.add(path, f"Invalid value: {show(name)}: a resource name must be a non-empty string")
            continue
        problem = qualified_name_problem(name)
        if problem is not None:  # as Kubernetes' ValidateResourceName (and no spreadsheet formula can pass)
            errors.add(path or "resources", f"Invalid value: {show(name)}: {problem}")
            continue
        if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
            errors.add(
                item, f"Invalid value: {show(quantity)}: quantities must be strings or numbers", "FieldValueTypeInvalid"
            )
            continue
        try:
            amount = parse_quantity(quantity)
            nanos = amount.scaleb(9)
            if nanos != nanos.to_integral_value():
                errors.add(item, f"Invalid value: {show(quantity)}: must be a multiple of 1n (finer precision is lost)")
                continue
            parsed[name] = parse_resource(name, quantity)
            if parsed[name] > MAX_QUANTITY:
                unit = "millicores" if name == "cpu" else "bytes" if is_byte_resource(name) else "units"
                errors.add(item, f"Invalid value: {show(quantity)}: must be at most {MAX_QUANTITY} {unit}")
                del parsed[name]
        except QuantityError as exc:
            text = str(exc)
            if "negative" in text:
                errors.add(item, f"Invalid value: {show(quantity)}: must be greater than or equal to 0")
            else:
                errors.add(
                    item,
                    f"Invalid value: {show(quantity)}: quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )
    return parsed


@dataclass
class Metadata:
    """The checked ``metadata`` of a document."""

    name: str
    namespace: str | None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    resource_version: str | None = None
    owner_references: list[Any] = field(default_factory=list)
    finalizers: list[str] = field(default_factory=list)


def _check_string_map(errors: Errors, path: str, value: Any, *, label_values: bool) -> dict[str, str]:
    if value is None:
        return {}
    if not expect(errors, path, value, dict, "object"):
        return {}
    if len(value) > MAX_LABELS and label_values:
        errors.add(path, f"Too many: {len(value)}: must have at most {MAX_LABELS} items", "FieldValueTooMany")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(item, str):
            errors.add(
                f"{path}.{key}",
                f"Invalid value: {show(item)}: {path}.{key} in body must be of type string",
                "FieldValueTypeInvalid",
            )
            continue
        prefix, _, name = key.rpartition("/")
        if (
            not name
            or len(name) > 63
            or not QUALIFIED_NAME_RE.match(name)
            or (prefix and not DNS1123_SUBDOMAIN_RE.match(prefix))
        ):
            errors.add(
                path,
                f"Invalid value: {show(key)}: name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (an optional DNS subdomain prefix and '/')",
            )
            continue
        if label_values and (len(item) > 63 or not LABEL_VALUE_RE.match(item)):
            errors.add(
                f"{path}.{key}",
                f"Invalid value: {show(item)}: a valid label must be an empty string or consist of alphanumeric "
                "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            )
            continue
        out[key] = item
    if sum(len(k) + len(v) for k, v in out.items()) > MAX_METADATA_BYTES:
        errors.add(path, f"Too long: must have at most {MAX_METADATA_BYTES} bytes", "FieldValueTooLong")
    return out


def check_metadata(errors: Errors, doc: dict[str, Any], *, namespaced: bool, name_check: str = "subdomain") -> Metadata:
    """Check ``metadata``: name required and valid, namespace valid, labels/annotations string maps."""
    meta = get_map(errors, doc, "metadata", "metadata")
    name = meta.get("name")
    if name is None or name == "":
        errors.required("metadata.name")
        name = ""
    elif not isinstance(name, str):
        expect(errors, "metadata.name", name, str, "string")
        name = ""
    elif name_check == "label":
        check_dns_label(errors, "metadata.name", name)
    else:
        check_dns_subdomain(errors, "metadata.name", name)
    namespace = meta.get("namespace")
    if namespace is not None:
        if not isinstance(namespace, str):
            expect(errors, "metadata.namespace", namespace, str, "string")
            namespace = None
        elif not namespaced:
            namespace = None  # cluster-scoped objects ignore a namespace, as kubectl does
        elif namespace:
            check_dns_label(errors, "metadata.namespace", namespace)
        else:
            namespace = None
    resource_version = meta.get("resourceVersion")
    if resource_version is not None and not isinstance(resource_version, str | int):
        expect(errors, "metadata.resourceVersion", resource_version, str, "string")
        resource_version = None
    owner_references = meta.get("ownerReferences") or []
    if not isinstance(owner_references, list):
        expect(errors, "metadata.ownerReferences", owner_references, list, "array")
        owner_references = []
    finalizers = meta.get("finalizers") or []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        errors.add(
            "metadata.finalizers",
            "Invalid value: metadata.finalizers in body must be an array of strings",
            "FieldValueTypeInvalid",
        )
        finalizers = []
    return Metadata(
        name=name,
        namespace=namespace,
        labels=_check_string_map(errors, "metadata.labels", meta.get("labels"), label_values=True),
        annotations=_check_string_map(errors, "metadata.annotations", meta.get("annotations"), label_values=False),
        resource_version=str(resource_version) if resource_version is not None else None,
        owner_references=owner_references,
        finalizers=finalizers,
    )
