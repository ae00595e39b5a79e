"""The scheduling core imports nothing from the web stack and does no I/O at import."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORBIDDEN = {"django", "celery", "channels", "volcanoweb", "rest_framework", "kubernetes", "redis"}
ALLOWED_THIRD_PARTY = {"yaml", "numpy"}
CORE_BANNED = {"random", "time", "datetime", "socket", "subprocess", "os", "threading"}


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_scheduler_modules_import_only_stdlib_yaml_and_numpy() -> None:
    stdlib = set(sys.stdlib_module_names)
    for path in sorted((ROOT / "scheduler").rglob("*.py")):
        names = _imports(path) - {"scheduler", "__future__"}
        assert not names & FORBIDDEN, f"{path}: {names & FORBIDDEN}"
        assert names <= stdlib | ALLOWED_THIRD_PARTY, f"{path}: {names - stdlib - ALLOWED_THIRD_PARTY}"


def test_core_modules_read_no_clock_and_no_randomness() -> None:
    for path in sorted((ROOT / "scheduler").rglob("*.py")):
        if path.name in ("cli.py", "__main__.py"):
            continue
        names = _imports(path)
        assert not names & CORE_BANNED, f"{path}: {names & CORE_BANNED}"


def test_importing_the_scheduler_loads_no_web_package() -> None:
    code = (
        "import sys, scheduler, scheduler.cli, scheduler.testing, scheduler.decode\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN)!r}]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
