"""The package's public names load on first use: a caller of one small module does not import the whole core."""

from __future__ import annotations

import subprocess
import sys

import pytest

import scheduler


def test_every_public_name_resolves_from_its_module() -> None:
    assert sorted(scheduler._HOME) == sorted(scheduler.__all__)
    for name in scheduler.__all__:
        value = getattr(scheduler, name)
        assert getattr(sys.modules[scheduler._HOME[name]], name) is value
    assert set(scheduler.__all__) <= set(dir(scheduler))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        scheduler.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


def test_vcctl_imports_neither_the_core_nor_numpy_nor_django() -> None:
    probe = (
        "import sys, volcanoweb.cli.main; "
        "print(sorted(m for m in sys.modules if m == 'numpy' or m == 'django' or m.startswith('scheduler.')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['scheduler.quantity']", out
