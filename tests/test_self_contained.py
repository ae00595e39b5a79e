"""The repository carries everything its tests, demo and docs need: nothing is read from beside or above it.

* a guard over the tracked files: no path to the shared folder beside the clone, no design notes outside
  the tree, no absolute path of a developer machine;
* a fresh copy of the tracked tree (what ``git clone`` gives) in an empty temporary folder collects the whole
  suite and runs the tests that read the cookbook, with nothing beside it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What would make a file depend on something outside the repository.
OUTSIDE = re.compile(r"\.\./shared|\bshared/(manifests|design)\b|\.\./design/|/work/|/home/|/Users/")
#: Tests that read the cookbook (module level or in the test): they must pass in the copy.
COOKBOOK_READERS = (
    "tests/scheduler/test_config.py::test_it_accepts_the_cookbook_config",
    "tests/volcanoweb/api/test_cookbook.py::test_the_cookbook_is_where_the_tests_expect_it",
)


def tracked_files() -> list[str]:
    """The files ``git clone`` would give (``git ls-files``), relative to the repository."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def test_the_guard_catches_what_it_must() -> None:
    up, shared = "..", "shared"  # spelled in parts, so that this file itself holds no such path
    samples = (f'COOKBOOK = ROOT.parent / "{up}/{shared}/x"', f"/work/{shared}/manifests/cookbook/a.yaml", "/home/me/x")
    for bad in samples:
        assert OUTSIDE.search(bad), bad
    for fine in ('"/root/.ssh"', "volcanoweb/demo/cookbook/01.yaml", "/api/v1/queues/root/close", "/tmp/x"):
        assert not OUTSIDE.search(fine), fine


def test_no_tracked_file_points_outside_the_repository() -> None:
    offenders = []
    this = Path(__file__).resolve().relative_to(ROOT).as_posix()  # it spells the patterns out
    for name in tracked_files():
        if name == this:
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images and other binaries
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_a_fresh_copy_with_nothing_beside_it_collects_and_reads_its_own_cookbook(tmp_path: Path) -> None:
    clone = tmp_path / "empty" / "volcanoweb"
    for name in tracked_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    assert sorted(p.name for p in clone.parent.iterdir()) == ["volcanoweb"]  # nothing beside it
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["VAR_DIR"] = str(tmp_path / "var")

    where = subprocess.run(
        [sys.executable, "-c", "import tests, volcanoweb, scheduler; print(tests.__file__, volcanoweb.__file__)"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(Path(p).is_relative_to(clone) for p in where.stdout.split()), where.stdout  # the copy's code

    collect = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=clone, env=env, capture_output=True, text=True
    )
    assert collect.returncode == 0, collect.stdout[-4000:] + collect.stderr[-2000:]
    assert "error" not in collect.stdout.lower().splitlines()[-1], collect.stdout[-2000:]
    collected = int(re.search(r"(\d+) tests? collected", collect.stdout).group(1))  # type: ignore[union-attr]
    assert collected > 1000

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *COOKBOOK_READERS],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{len(COOKBOOK_READERS)} passed" in run.stdout, run.stdout[-2000:]
