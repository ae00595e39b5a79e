"""Client configuration: ``$XDG_CONFIG_HOME/volcanoweb/config`` (YAML or INI), the environment, flags.

Precedence, highest first: ``--server``/``--token``/``--namespace`` flags, the environment
(``VOLCANOWEB_SERVER``, ``VOLCANOWEB_TOKEN``, ``VOLCANOWEB_NAMESPACE``), the config file. The file
holds ``server``, ``token`` and ``namespace`` keys, either as a YAML mapping::

    server: https://volcano.example.com
    token: vw_...
    namespace: team-a

or as INI with the keys in any one section (``[default]`` is used first)::

    [default]
    server = https://volcano.example.com
    token = vw_...
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from volcanoweb.cli.errors import usage_error

KEYS = ("server", "token", "namespace")
ENV = {"server": "VOLCANOWEB_SERVER", "token": "VOLCANOWEB_TOKEN", "namespace": "VOLCANOWEB_NAMESPACE"}


def config_path() -> Path:
    """Return the config file's path (``$XDG_CONFIG_HOME`` or ``~/.config``, then ``volcanoweb/config``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "volcanoweb" / "config"


def _parse_ini(text: str, path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise usage_error(f"cannot read the config file {path}: {exc}") from None
    sections = ["default", *(s for s in parser.sections() if s != "default")]
    for section in sections:
        if parser.has_section(section):
            return {k: v for k, v in parser.items(section) if k in KEYS}
    return {}


def read_file(path: Path | None = None) -> dict[str, str]:
    """Return the config file's keys ({} when there is no file); bad syntax is a usage error."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise usage_error(f"cannot read the config file {path}: {exc}") from None
    if not text.strip():
        return {}
    if text.lstrip().startswith("["):
        return _parse_ini(text, path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        return {str(k): str(v) for k, v in data.items() if k in KEYS and v is not None}
    return _parse_ini(text, path)


def write_file(values: dict[str, str], path: Path | None = None) -> Path:
    """Merge ``values`` into the config file (YAML, mode 0600: it holds a token); return its path."""
    path = path or config_path()
    current = read_file(path)
    current.update({k: v for k, v in values.items() if v})
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(yaml.safe_dump({k: current[k] for k in KEYS if k in current}, sort_keys=False))
    os.replace(tmp, path)
    return path


@dataclass
class Settings:
    """The resolved server URL, token and default namespace (each may be empty)."""

    server: str = ""
    token: str = ""
    namespace: str = ""


def resolve(server: str | None, token: str | None, namespace: str | None) -> Settings:
    """Return the settings from flags (given here), the environment and the config file."""
    flags = {"server": server, "token": token, "namespace": namespace}
    stored = read_file()
    values = {}
    for key in KEYS:
        values[key] = flags[key] or os.environ.get(ENV[key]) or stored.get(key) or ""
    return Settings(server=values["server"].rstrip("/"), token=values["token"], namespace=values["namespace"])
