"""The CLI's error types: each carries the process exit status (2 bad usage or input, 1 server side)."""

from __future__ import annotations

from dataclasses import dataclass, field

EXIT_SERVER = 1
EXIT_USAGE = 2


@dataclass
class CliError(Exception):
    """A failure reported as ``error: <message>`` (plus indented detail lines) with an exit status."""

    message: str
    code: int = EXIT_SERVER
    details: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def usage_error(message: str, *details: str) -> CliError:
    """Return an error for bad usage or invalid input (exit status 2)."""
    return CliError(message, EXIT_USAGE, list(details))
