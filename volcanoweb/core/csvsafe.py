"""CSV cells a spreadsheet will not run: a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is a formula to Excel, LibreOffice and Google Sheets; it is written with a leading ``'`` (OWASP's advice
against CSV injection). Numbers are written as they are. Every CSV export writes its rows through
:func:`safe_row` (the queue history of the API and of ``vcctl``). No Django here: ``vcctl`` imports it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Return ``value``, or a text cell that starts like a formula with a ``'`` in front."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(row: Iterable[Any]) -> list[Any]:
    """Return the row with every cell through :func:`safe_cell`."""
    return [safe_cell(value) for value in row]
