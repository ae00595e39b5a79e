"""``vcctl jobflow|jobtemplate create|list|get|describe|delete`` (vcctl's flow commands)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from volcanoweb.cli import output
from volcanoweb.cli.client import path
from volcanoweb.cli.context import Context, mapping, read_manifest
from volcanoweb.cli.errors import usage_error


@dataclass(frozen=True)
class Kind:
    """One flow kind: its name, URL plural and list columns."""

    kind: str
    plural: str
    command: str
    phase: bool


KINDS = (Kind("JobFlow", "jobflows", "jobflow", True), Kind("JobTemplate", "jobtemplates", "jobtemplate", False))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``jobflow`` and ``jobtemplate`` command groups."""
    for kind in KINDS:
        group = sub.add_parser(kind.command, help=f"{kind.kind}s: create, list, get, describe, delete")
        actions = group.add_subparsers(dest="action_name", metavar="ACTION", required=True)

        create = actions.add_parser("create", parents=[common], help=f"create {kind.kind}s from a file")
        create.add_argument("--file", "-f", required=True, help="YAML file (several --- separated documents allowed)")
        _namespace(create)
        create.set_defaults(func=create_objects, kind=kind)

        lst = actions.add_parser("list", parents=[common], help=f"list {kind.kind}s")
        _namespace(lst)
        lst.add_argument("--all-namespaces", action="store_true", help="every namespace you can see")
        lst.set_defaults(func=list_objects, kind=kind)

        get = actions.add_parser("get", parents=[common], help=f"show one {kind.kind}")
        get.add_argument("--name", "-N", default="", help="name")
        _namespace(get)
        get.set_defaults(func=get_object, kind=kind)

        describe = actions.add_parser("describe", parents=[common], help=f"print one {kind.kind} (YAML by default)")
        describe.add_argument("--name", "-N", default="", help="name")
        _namespace(describe)
        describe.set_defaults(func=describe_object, kind=kind)

        delete = actions.add_parser("delete", parents=[common], help=f"delete {kind.kind}s by name or file")
        delete.add_argument("--name", "-N", default="", help="name")
        delete.add_argument("--file", "-f", default="", help="delete the objects named in this file")
        _namespace(delete)
        delete.set_defaults(func=delete_objects, kind=kind)


def _namespace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", "-n", default="", help="namespace (default: your configured namespace)")


def _documents(ctx: Context, kind: Kind) -> list[dict[str, Any]]:
    _, docs = read_manifest(ctx.args.file)
    for i, doc in enumerate(docs, 1):
        if doc.get("kind") != kind.kind:
            raise usage_error(f"{ctx.args.file}: document {i} is a {doc.get('kind')!r}, expected {kind.kind}")
    return docs


def _doc_namespace(ctx: Context, doc: dict[str, Any]) -> str:
    meta = mapping(doc, "metadata")
    return ctx.namespace(ctx.args.namespace or str(meta.get("namespace") or ""))


def create_objects(ctx: Context) -> int:
    """Create every document of the file (each one a POST; the first failure stops)."""
    kind: Kind = ctx.args.kind
    created = []
    for doc in _documents(ctx, kind):
        obj = ctx.client.post(path("namespaces", _doc_namespace(ctx, doc), kind.plural), doc) or {}
        created.append(obj)
        if not ctx.output:
            output.write(f"create {kind.command} {(obj.get('metadata') or {}).get('name', '')} successfully")
    if ctx.output:
        output.emit(created[0] if len(created) == 1 else {"kind": "List", "items": created}, ctx.output)
    return 0


def _row(kind: Kind, obj: dict[str, Any]) -> list[Any]:
    meta = obj.get("metadata") or {}
    row = [meta.get("name", ""), meta.get("namespace", "")]
    if kind.phase:
        row.append(((obj.get("status") or {}).get("state") or {}).get("phase") or "")
    row.append(output.age(meta.get("creationTimestamp")))
    return row


def _headers(kind: Kind) -> tuple[str, ...]:
    return ("Name", "Namespace", "Phase", "Age") if kind.phase else ("Name", "Namespace", "Age")


def list_objects(ctx: Context) -> int:
    """List JobFlows or JobTemplates."""
    kind: Kind = ctx.args.kind
    if ctx.args.all_namespaces:
        body = ctx.client.list_all(path(kind.plural))
    else:
        body = ctx.client.list_all(path("namespaces", ctx.namespace(ctx.args.namespace), kind.plural))
    if ctx.output:
        output.emit(body, ctx.output)
    else:
        output.table(_headers(kind), [_row(kind, o) for o in body["items"]])
    return 0


def _fetch(ctx: Context) -> dict[str, Any]:
    kind: Kind = ctx.args.kind
    if not ctx.args.name:
        raise usage_error(f"{kind.command} name (specified by --name or -N) is mandatory")
    return ctx.client.get(path("namespaces", ctx.namespace(ctx.args.namespace), kind.plural, ctx.args.name)) or {}


def get_object(ctx: Context) -> int:
    """Show one object as a table row (or JSON/YAML)."""
    obj = _fetch(ctx)
    if ctx.output:
        output.emit(obj, ctx.output)
    else:
        output.table(_headers(ctx.args.kind), [_row(ctx.args.kind, obj)])
    return 0


def describe_object(ctx: Context) -> int:
    """Print one object, YAML unless ``-o json``."""
    output.emit(_fetch(ctx), ctx.output or "yaml")
    return 0


def delete_objects(ctx: Context) -> int:
    """Delete by ``--name`` or every object named in ``--file``."""
    kind: Kind = ctx.args.kind
    if ctx.args.file:
        targets = []
        for doc in _documents(ctx, kind):
            meta = mapping(doc, "metadata")
            if not meta.get("name"):
                raise usage_error(f"{ctx.args.file}: every {kind.kind} needs metadata.name")
            targets.append((_doc_namespace(ctx, doc), str(meta["name"])))
    elif ctx.args.name:
        targets = [(ctx.namespace(ctx.args.namespace), ctx.args.name)]
    else:
        raise usage_error(f"{kind.command} name (--name/-N) or file (--file/-f) is mandatory to delete")
    for namespace, name in targets:
        ctx.client.delete(path("namespaces", namespace, kind.plural, name))
        output.write(f"delete {kind.command} {name} successfully")
    return 0
