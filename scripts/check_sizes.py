"""The size rules ruff has no rule for: no product function over 60 lines, no product module over 600 lines.

``make lint`` runs it over the product's code (``scheduler/`` and ``volcanoweb/``; migrations are generated and
left out). A function's length runs from its ``def`` line to its last line (decorators are not counted; its
docstring is). A file that is a data table (a list of cases, a schema) may be named in ``DATA_TABLES`` with the
reason; nothing else is exempt. The thresholds and their reasons are in CONTRIBUTING.md ("Size rules").

    python scripts/check_sizes.py [PATH ...]     # exit 1 and one line per offender, else exit 0
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 600
ROOTS = ("scheduler", "volcanoweb")
#: path (relative to the repository) -> why it may be longer than MAX_MODULE_LINES
DATA_TABLES: dict[str, str] = {}


def _files(paths: list[str]) -> Iterator[Path]:
    for name in paths:
        path = Path(name)
        candidates = [path] if path.is_file() else sorted(path.rglob("*.py"))
        yield from (p for p in candidates if p.suffix == ".py" and "migrations" not in p.parts)


def offences(path: Path) -> Iterator[str]:
    """One line per rule the file breaks: ``path:line: what``."""
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > MAX_MODULE_LINES and path.as_posix() not in DATA_TABLES:
        yield f"{path}:1: module of {lines} lines (at most {MAX_MODULE_LINES}): split it along a seam"
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield (
                    f"{path}:{node.lineno}: function {node.name} of {length} lines "
                    f"(at most {MAX_FUNCTION_LINES}): split it into named steps"
                )


def main(argv: list[str]) -> int:
    found = [line for path in _files(argv or list(ROOTS)) for line in offences(path)]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
