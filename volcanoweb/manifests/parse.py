"""Parse multi-document YAML or JSON manifests with size limits, and recognise their kinds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from django.conf import settings

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.manifests import strict
from volcanoweb.manifests.marked import MarkedMapping

MAX_DOCUMENTS = 100
MAX_DEPTH = 40
#: Most values (mappings, lists, scalars) in one body once YAML aliases are expanded.
MAX_NODES = 200_000


@dataclass(frozen=True)
class KindInfo:
    """A supported kind: API group/version, kind, plural resource name and scope."""

    api_version: str
    kind: str
    resource: str
    namespaced: bool

    @property
    def group(self) -> str:
        """Return the API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def qualified_resource(self) -> str:
        """Return ``<resource>.<group>`` as Kubernetes spells it in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


JOB = KindInfo("batch.volcano.sh/v1alpha1", "Job", "jobs", True)
CRONJOB = KindInfo("batch.volcano.sh/v1alpha1", "CronJob", "cronjobs", True)
QUEUE = KindInfo("scheduling.volcano.sh/v1beta1", "Queue", "queues", False)
PODGROUP = KindInfo("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", True)
JOBFLOW = KindInfo("flow.volcano.sh/v1alpha1", "JobFlow", "jobflows", True)
JOBTEMPLATE = KindInfo("flow.volcano.sh/v1alpha1", "JobTemplate", "jobtemplates", True)
PRIORITYCLASS = KindInfo("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False)
POD = KindInfo("v1", "Pod", "pods", True)
RESOURCEQUOTA = KindInfo("v1", "ResourceQuota", "resourcequotas", True)
HYPERNODE = KindInfo("topology.volcano.sh/v1alpha1", "HyperNode", "hypernodes", False)
#: A Volcano scheduler configuration document (``actions:`` + ``tiers:``, no apiVersion/kind).
SCHEDULER_CONFIG = KindInfo("volcanoweb.io/v1", "SchedulerConfiguration", "scheduler-config", False)

SUPPORTED_KINDS = (JOB, CRONJOB, QUEUE, PODGROUP, JOBFLOW, JOBTEMPLATE, PRIORITYCLASS, POD, RESOURCEQUOTA, HYPERNODE)
_BY_KEY = {(info.api_version, info.kind): info for info in SUPPORTED_KINDS}


def supported_kinds_text() -> str:
    """Return the human list of supported kinds, used in the unsupported-kind message."""
    listed = [f"{info.kind} ({info.api_version})" for info in SUPPORTED_KINDS]
    return ", ".join([*listed, "a Volcano scheduler configuration (actions/tiers)"])


def _check_values(value: Any, limit: int) -> str | None:
    """Return why a parsed document cannot be stored as JSON (depth, keys, NUL, dates, NaN, huge ints)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return f"nested deeper than {limit} levels"
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"mapping keys must be strings, got {key!r}"
                if "\x00" in key:
                    return "NUL characters are not allowed"
                stack.append((child, level + 1))
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            if "\x00" in item:
                return "NUL characters are not allowed"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -(2**63) <= item < 2**63:
                return f"integer out of range: {item}"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return "NaN and infinite numbers are not allowed"
        else:
            return f"values of type {type(item).__name__} are not allowed (quote dates and binary data)"
    return None


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(
            f"the request body is not valid UTF-8: {exc}",
            causes=[Cause("", f"not valid UTF-8 at byte {exc.start}", "FieldValueInvalid")],
        ) from None


def _mapping(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    duplicates: list[str] = []
    for key, value in pairs:
        if key in result and str(key) not in duplicates:
            duplicates.append(str(key))
        result[key] = value
    if not duplicates:
        return result
    marked = MarkedMapping(result)
    marked.duplicates = duplicates
    return marked


_YamlLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_YamlLoader):  # type: ignore[misc, valid-type]  # a base chosen at import (C or Python loader)
    """PyYAML's safe loader whose mappings remember repeated keys (see :class:`MarkedMapping`)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        pairs = []
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
                ) from None
            pairs.append((key, self.construct_object(value_node, deep=deep)))
        return _mapping(pairs)


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    # Built at once (not PyYAML's two-step generator, which copies into a plain dict): a mapping that
    # contains itself through an alias is refused as "unconstructable recursive node".
    return loader.construct_mapping(node)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def _scan_yaml(text: str) -> None:
    """Bound a YAML text before it is built: nesting depth and the number of nodes once aliases are expanded.

    Walks the parser's events (no recursion, nothing built): an alias counts as many nodes as its anchor
    expands to, so a "billion laughs" document is refused after reading its few hundred bytes.
    """
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, nodes so far) of each open collection
    total = 0
    for event in yaml.parse(text, Loader=_YamlLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append((event.anchor, 1))
            if len(open_nodes) > MAX_DEPTH:
                raise BadRequest(
                    f"cannot parse YAML: nested deeper than {MAX_DEPTH} levels",
                    causes=[Cause("", f"nested deeper than {MAX_DEPTH} levels", "FieldValueInvalid")],
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, count = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = count
        elif isinstance(event, yaml.ScalarEvent):
            count = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            count = sizes.get(event.anchor, 1) if event.anchor is not None else 1
        else:
            continue
        if open_nodes:
            anchor, so_far = open_nodes[-1]
            open_nodes[-1] = (anchor, so_far + count)
        else:
            total += count
        if total + sum(n for _, n in open_nodes) > MAX_NODES:
            raise BadRequest(
                f"cannot parse YAML: more than {MAX_NODES} values once aliases are expanded",
                causes=[Cause("", f"more than {MAX_NODES} values once aliases are expanded", "FieldValueInvalid")],
            )


def _load_yaml(text: str) -> list[Any]:
    _scan_yaml(text)
    loader = _Loader(text)
    try:
        documents = []
        while loader.check_node():
            documents.append(loader.construct_document(loader.get_node()))
        return documents
    finally:
        loader.dispose()


def _load(text: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            loaded = json.loads(text, object_pairs_hook=_mapping)
        except json.JSONDecodeError as exc:
            raise BadRequest(
                f"cannot parse JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                causes=[Cause("", f"line {exc.lineno} column {exc.colno}: {exc.msg}", "FieldValueInvalid")],
            ) from None
        except RecursionError:
            raise BadRequest(
                f"cannot parse JSON: nested deeper than {MAX_DEPTH} levels",
                causes=[Cause("", f"nested deeper than {MAX_DEPTH} levels", "FieldValueInvalid")],
            ) from None
        return loaded if isinstance(loaded, list) else [loaded]
    try:
        return _load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadRequest(
            f"cannot parse YAML{where}: {problem}",
            causes=[Cause("", f"{problem}{where}", "FieldValueInvalid")],
        ) from None
    except RecursionError:
        raise BadRequest("cannot parse YAML: the document is nested too deeply") from None


def parse_documents(
    data: bytes | str, *, field_validation: str | None = None, warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """Return the non-empty documents of a YAML or JSON body (a ``List`` kind or a JSON array is expanded).

    Raises :class:`BadRequest` for an oversized body, too many documents, unparseable text, a
    document that is not a mapping, nesting deeper than ``MAX_DEPTH`` or more than ``MAX_NODES``
    values (aliases expanded). With ``field_validation`` (``Strict``, ``Warn``, ``Ignore``; see
    :mod:`volcanoweb.manifests.strict`) duplicate and unknown fields are refused or dropped, and the
    warnings of ``Warn`` are recorded with :func:`volcanoweb.manifests.strict.warn`.
    """
    limit = settings.MAX_MANIFEST_BYTES
    size = len(data.encode() if isinstance(data, str) else data)
    if size > limit:
        raise BadRequest(f"the manifest is too large: {size} bytes, the limit is {limit} bytes")
    documents: list[dict[str, Any]] = []
    for index, doc in enumerate(_load(_decode(data))):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise BadRequest(
                f"document {index + 1}: expected a mapping (an object with apiVersion and kind), "
                f"got {type(doc).__name__}"
            )
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            documents.extend(item for item in doc["items"] if item is not None)
        else:
            documents.append(doc)
    if not documents:
        raise BadRequest("the manifest contains no objects")
    max_documents = max(MAX_DOCUMENTS, settings.MAX_MANIFEST_DOCUMENTS)
    if len(documents) > max_documents:
        raise BadRequest(f"too many objects in one request: {len(documents)}, the limit is {max_documents}")
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise BadRequest(f"document {index + 1}: expected a mapping, got {type(doc).__name__}")
        problem = _check_values(doc, MAX_DEPTH)
        if problem:
            raise BadRequest(f"document {index + 1}: {problem}", causes=[Cause("", problem, "FieldValueInvalid")])
    if field_validation is not None:
        documents = strict.validate_fields(documents, field_validation, warnings)
    return documents


def load_mapping(
    data: bytes | str,
    known: frozenset[str] | None = None,
    *,
    field_validation: str = "Strict",
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """Return a small JSON or YAML object body (a command, a token request), with the manifests' limits.

    Keys outside ``known`` (when given) and repeated keys are handled per ``field_validation``.
    """
    limit = settings.MAX_MANIFEST_BYTES
    size = len(data.encode() if isinstance(data, str) else data)
    if size > limit:
        raise BadRequest(f"the body is too large: {size} bytes, the limit is {limit} bytes")
    loaded = [doc for doc in _load(_decode(data)) if doc is not None]
    if len(loaded) != 1 or not isinstance(loaded[0], dict):
        raise BadRequest("the body must be a JSON or YAML object")
    body: dict[str, Any] = loaded[0]
    problem = _check_values(body, MAX_DEPTH)
    if problem:
        raise BadRequest(f"the body is invalid: {problem}", causes=[Cause("", problem, "FieldValueInvalid")])
    return strict.check_body_fields(body, known, field_validation, warnings)


def load_patch(data: bytes | str) -> Any:
    """Return a PATCH body (a JSON or YAML object, or a JSON patch list) with the manifests' limits.

    The same refusals as :func:`parse_documents`: size, invalid UTF-8, NUL characters, nesting deeper than
    ``MAX_DEPTH``, alias bombs and absurd numbers; repeated keys are kept marked
    (:func:`volcanoweb.manifests.marked.duplicate_fields`).
    """
    limit = settings.MAX_MANIFEST_BYTES
    size = len(data.encode() if isinstance(data, str) else data)
    if size > limit:
        raise BadRequest(f"the patch is too large: {size} bytes, the limit is {limit} bytes")
    text = _decode(data)
    stripped = text.lstrip()
    loaded = [doc for doc in _load(text) if doc is not None]
    if stripped.startswith("["):
        # _load expands a JSON array into documents: a JSON patch is that array.
        body: Any = loaded
    elif len(loaded) == 1:
        body = loaded[0]
    else:
        raise BadRequest("the PATCH body must be one JSON or YAML value")
    problem = _check_values(body, MAX_DEPTH)
    if problem:
        raise BadRequest(f"the patch is invalid: {problem}", causes=[Cause("", problem, "FieldValueInvalid")])
    return body


def is_scheduler_config(doc: dict[str, Any]) -> bool:
    """Return True for a bare Volcano scheduler configuration (``actions``/``tiers``, no kind)."""
    return "kind" not in doc and "apiVersion" not in doc and ("actions" in doc or "tiers" in doc)


def identify(doc: dict[str, Any]) -> KindInfo:
    """Return the kind of a document, or raise :class:`BadRequest` naming it and listing the supported kinds."""
    if is_scheduler_config(doc):
        return SCHEDULER_CONFIG
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise BadRequest(
            "Object 'Kind' is missing in the document; supported kinds: " + supported_kinds_text(),
            causes=[Cause("kind", "Required value", "FieldValueRequired")],
        )
    if not isinstance(api_version, str) or not api_version:
        raise BadRequest(
            f"Object 'apiVersion' is missing in the {kind} document",
            kind=kind,
            causes=[Cause("apiVersion", "Required value", "FieldValueRequired")],
        )
    info = _BY_KEY.get((api_version, kind))
    if info is None:
        raise BadRequest(
            f'no matches for kind "{kind}" in version "{api_version}": this product manages only '
            + supported_kinds_text(),
            kind=kind,
            causes=[Cause("kind", f'Unsupported value: "{kind}" in "{api_version}"', "FieldValueNotSupported")],
        )
    return info
