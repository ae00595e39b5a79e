"""``fieldValidation`` on the object a write is about to store: unknown fields and repeated keys."""

from __future__ import annotations

from typing import Any

from volcanoweb.core.errors import BadRequest, Cause
from volcanoweb.kubeapi.registry import KubeResource
from volcanoweb.manifests import strict
from volcanoweb.manifests.marked import duplicate_fields

#: The known fields of the kinds only the Kubernetes API writes (Volcano's bus.volcano.sh Command: an
#: OwnerReference as ``target``); the others are :data:`volcanoweb.manifests.strict.SCHEMAS`.
KUBE_SCHEMAS: dict[str, Any] = {
    "Command": {
        **dict.fromkeys(("apiVersion", "kind", "action", "reason", "message"), strict.ANY),
        "metadata": strict.METADATA,
        "target": dict.fromkeys(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"), strict.ANY),
    }
}


def check_fields(
    resource: KubeResource, doc: dict[str, Any], mode: str, warnings: list[str], *, source: Any = None
) -> dict[str, Any]:
    """Apply ``fieldValidation`` to the object about to be written: its unknown fields (removed from ``doc``
    whatever the mode, so they are never stored) and the repeated keys of what the client sent (``source``,
    the body of a patch; ``doc`` itself for a create or an update).

    ``Strict`` raises the API server's 400: ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict
    decoding error: unknown field "spec.x", duplicate field "y"``, with one cause per field
    (``FieldValueUnknown`` / ``FieldValueDuplicate``); ``Warn`` appends the same texts to ``warnings`` (one
    ``Warning`` header each); ``Ignore`` drops them silently.
    """
    mode = strict.check_mode(mode)
    duplicates = duplicate_fields(doc if source is None else source)
    schema = strict.SCHEMAS.get(resource.info.kind, KUBE_SCHEMAS.get(resource.info.kind))
    unknown = strict.unknown_fields(doc, schema) if schema is not None else []
    causes = [Cause(path, f'unknown field "{path}"', "FieldValueUnknown") for path in unknown]
    causes += [Cause(path, f'duplicate field "{path}"', "FieldValueDuplicate") for path in duplicates]
    if not causes or mode == strict.IGNORE:
        return doc
    notes = [cause.message for cause in causes]
    if mode == strict.WARN:
        warnings.extend(notes)
        return doc
    kind, version = resource.info.kind, resource.info.api_version.rsplit("/", 1)[-1]
    raise BadRequest(
        f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: ' + ", ".join(notes),
        kind=kind,
        group=resource.group,
        causes=causes,
    )
