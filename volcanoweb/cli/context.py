"""The per-invocation context: parsed arguments, resolved settings, the API client, manifest reading."""

from __future__ import annotations

import argparse
import sys
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from volcanoweb.cli import config
from volcanoweb.cli.client import Client, path
from volcanoweb.cli.errors import usage_error

#: The largest manifest file the CLI reads (the server has its own, usually lower, limit).
MAX_FILE_BYTES = 16 * 1024 * 1024


class Context:
    """What every command needs: its arguments, the settings, a lazily built client."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.settings = config.resolve(getattr(args, "server", None), getattr(args, "token", None), None)

    @cached_property
    def client(self) -> Client:
        """Return the API client (a usage error when no server is configured)."""
        return Client(self.settings.server, self.settings.token)

    @property
    def output(self) -> str:
        """Return ``json``, ``yaml`` or ``""`` (tables)."""
        return getattr(self.args, "output", None) or ""

    def namespace(self, explicit: str | None = None) -> str:
        """Return the namespace: the flag, then the configured one, then the server's default for the caller."""
        if explicit:
            return explicit
        if self.settings.namespace:
            return self.settings.namespace
        return self.server_default_namespace

    @cached_property
    def server_default_namespace(self) -> str:
        """Return the caller's default namespace according to ``whoami`` (``default`` if none)."""
        who = self.client.get(path("whoami")) or {}
        return str(who.get("defaultNamespace") or "default")


def read_manifest(filename: str) -> tuple[str, list[dict[str, Any]]]:
    """Return the text and parsed documents of a YAML/JSON file (``-`` is stdin); usage errors when unreadable."""
    if filename == "-":
        text = sys.stdin.read(MAX_FILE_BYTES + 1)
        where = "<stdin>"
    else:
        file = Path(filename)
        where = filename
        try:
            if file.is_dir():
                raise usage_error(f"{filename} is a directory, not a manifest file")
            with file.open("r", encoding="utf-8") as handle:
                text = handle.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            raise usage_error(f"file {filename} does not exist") from None
        except UnicodeDecodeError:
            raise usage_error(f"{filename} is not a UTF-8 text file") from None
        except OSError as exc:
            raise usage_error(f"cannot read {filename}: {exc.strerror or exc}") from None
    if len(text) > MAX_FILE_BYTES:
        raise usage_error(f"{where} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise usage_error(f"{where} is not valid YAML{at}: {problem}") from None
    if not docs:
        raise usage_error(f"{where} holds no objects")
    for i, doc in enumerate(docs, 1):
        if not isinstance(doc, dict):
            raise usage_error(f"{where}: document {i} is not an object (a mapping with apiVersion, kind, metadata)")
    return text, docs


def mapping(doc: Any, key: str) -> dict[str, Any]:
    """Return ``doc[key]`` when it is a mapping, else an empty dict."""
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def split_key_values(text: str, flag: str) -> dict[str, str]:
    """Parse ``cpu=1000m,memory=100Mi`` into a dict; a usage error names the flag on bad syntax."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise usage_error(f"invalid {flag} {text!r}: expected name=value pairs separated by commas")
        out[key.strip()] = value.strip()
    return out
