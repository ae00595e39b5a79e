"""The house rules `make lint` enforces fail when they are broken, not only pass on today's tree.

Each rule is tried the way a contributor would break it, on a copy of the code: an over-long function and an
over-long module (``scripts/check_sizes.py``), a function over ruff's complexity and argument limits (the
size rules configured in ``pyproject.toml``), and a plugin importing the session it sits below
(import-linter's scheduler layers). CONTRIBUTING.md ("Size rules", "Layout") describes them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _check_sizes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_sizes", ROOT / "scripts" / "check_sizes.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_product_meets_the_length_rules() -> None:
    check_sizes = _check_sizes()
    found = [line for path in check_sizes._files(list(check_sizes.ROOTS)) for line in check_sizes.offences(path)]
    assert found == []


@pytest.mark.parametrize(("body_lines", "expected"), [(58, 0), (59, 1)])
def test_a_function_of_61_lines_is_refused_and_one_of_60_passes(tmp_path: Path, body_lines: int, expected: int) -> None:
    # def line + docstring + body_lines statements: 60 or 61 lines in all
    source = "def f():\n" + '    """Doc."""\n' + "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    path = tmp_path / "long.py"
    path.write_text(source)
    found = list(_check_sizes().offences(path))
    assert len(found) == expected
    if expected:
        assert found[0].endswith("function f of 61 lines (at most 60): split it into named steps")


def test_a_module_of_601_lines_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text("".join(f"X{i} = {i}\n" for i in range(601)))
    assert [line.split(": ", 1)[1] for line in _check_sizes().offences(path)] == [
        "module of 601 lines (at most 600): split it along a seam"
    ]


def _ruff(source: str, filename: str) -> str:
    result = subprocess.run(
        [str(BIN / "ruff"), "check", "--no-cache", "--output-format", "concise", "--stdin-filename", filename, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    return result.stdout


COMPLEX = (
    "def decide(a, b, c, d, e, f, g, h, i):\n"
    + "".join(f"    if a == {n}:\n        return {n}\n" for n in range(16))
    + "    return b, c, d, e, f, g, h, i\n"
)


def test_ruff_refuses_a_complex_function_with_too_many_arguments_in_the_product() -> None:
    out = _ruff(COMPLEX, "volcanoweb/core/example.py")
    assert "C901 `decide` is too complex (17 > 15)" in out
    assert "PLR0912 Too many branches (16 > 15)" in out
    assert "PLR0913 Too many arguments in function definition (9 > 8)" in out


def test_tests_are_not_held_to_the_size_rules() -> None:
    assert "C901" not in _ruff(COMPLEX, "tests/example_test.py")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the product's packages and contracts for the whole module; each case restores its file."""
    root = tmp_path_factory.mktemp("tree")
    for package in ("scheduler", "volcanoweb"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    kept = _lint_imports(root)
    assert kept.returncode == 0, kept.stdout[-2000:]
    return root


@pytest.mark.parametrize(
    ("module", "upward", "reported"),
    [
        ("scheduler/plugins/binpack.py", "scheduler.session", "scheduler.plugins.binpack -> scheduler.session"),
        ("volcanoweb/core/env.py", "volcanoweb.jobs.models", "volcanoweb.core.env -> volcanoweb.jobs.models"),
        ("volcanoweb/jobs/models.py", "volcanoweb.serve.loops", "volcanoweb.jobs.models -> volcanoweb.serve.loops"),
        ("volcanoweb/manifests/parse.py", "volcanoweb.api.base", "volcanoweb.manifests.parse -> volcanoweb.api.base"),
        (
            "volcanoweb/jobs/services/events.py",
            "volcanoweb.runtime.controllers.job",
            "volcanoweb.jobs.services.events -> volcanoweb.runtime.controllers.job",
        ),
    ],
)
def test_an_upward_import_fails_the_layers_contracts(tree: Path, module: str, upward: str, reported: str) -> None:
    """A plugin importing the session, core importing an app, an app importing the runners, validation
    importing an adapter, an object service importing a controller: each breaks a contract of ``make lint``
    (the tree as it is keeps them all)."""
    path = tree / module
    original = path.read_text()
    path.write_text(original + f"\nimport {upward}  # noqa: E402\n")
    try:
        broken = _lint_imports(tree)
    finally:
        path.write_text(original)
    assert broken.returncode != 0
    assert reported in broken.stdout


def _plain_row_locks(root: Path) -> list[str]:
    """``select_for_update(...)`` calls under ``root`` that do not take ``FOR NO KEY UPDATE``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        for call in re.finditer(r"select_for_update\(", text):
            depth, end = 1, call.end()
            while depth and end < len(text):  # to the call's closing parenthesis
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            if "no_key=True" not in text[call.end() : end]:
                found.append(f"{path.relative_to(root.parent)}:{text.count(chr(10), 0, call.start()) + 1}")
    return found


def test_every_row_lock_of_the_product_lets_key_share_locks_pass(tmp_path: Path) -> None:
    """CONTRIBUTING "Row locks": a plain ``FOR UPDATE`` would make the change log's commit-time foreign-key checks
    wait for it (and deadlock when its holder waits for the committer's rows)."""
    assert _plain_row_locks(ROOT / "volcanoweb") == []
    planted = tmp_path / "volcanoweb"
    planted.mkdir()
    (planted / "bad.py").write_text(
        'rows = Job.objects.select_for_update().filter(pk=1)\npods = Pod.objects.select_for_update(of=("self",))\n'
    )
    assert _plain_row_locks(planted) == ["volcanoweb/bad.py:1", "volcanoweb/bad.py:2"]
