"""Typed readers for environment variables; a bad value fails at start naming the variable."""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    return env.get(name)


def env_str(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> str:
    """Return the variable as a string, or the default when unset."""
    value = _raw(name, environ)
    return default if value is None else value


def env_secret(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> str:
    """Return NAME, or the contents of the file named by NAME_FILE (Docker secrets style)."""
    path = _raw(f"{name}_FILE", environ)
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path!r}: {exc.strerror}") from exc
    return env_str(name, default, environ)


def env_bool(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Return the variable as a boolean (1/0, true/false, yes/no, on/off)."""
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: expected a boolean (true/false, 1/0, yes/no, on/off), got {value!r}")


def env_int(name: str, default: int, environ: Mapping[str, str] | None = None, *, minimum: int | None = None) -> int:
    """Return the variable as an integer, checking an optional lower bound."""
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
    return number


def env_float(name: str, default: float, environ: Mapping[str, str] | None = None, *, positive: bool = False) -> float:
    """Return the variable as a float; with positive=True it must be greater than zero."""
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    text = value.strip()
    if text.endswith("ms"):
        scale, text = 0.001, text[:-2]
    elif text.endswith("s"):
        scale, text = 1.0, text[:-1]
    else:
        scale = 1.0
    try:
        number = float(text) * scale
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected a number, got {value!r}") from None
    if positive and not number > 0:
        raise ImproperlyConfigured(f"{name}: must be greater than zero, got {value!r}")
    return number


def env_choice(name: str, choices: tuple[str, ...], default: str, environ: Mapping[str, str] | None = None) -> str:
    """Return the variable if it is one of the choices."""
    value = env_str(name, default, environ).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def env_list(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> list[str]:
    """Return a comma-separated variable as a list of non-empty, stripped items."""
    return [item.strip() for item in env_str(name, default, environ).split(",") if item.strip()]
