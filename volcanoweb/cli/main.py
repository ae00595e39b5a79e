"""The ``vcctl`` entry point: argument parsing, dispatch, and the one place errors become exit statuses.

Exit statuses: 0 success; 2 bad usage or invalid input (argparse errors, unreadable or invalid
manifests, HTTP 400 from the server); 1 server, permission and connection errors; 130 on Ctrl-C.
Never a traceback (set ``VCCTL_DEBUG=1`` to see one for an unexpected error).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from volcanoweb.cli import cronjobs, jobs, kubeconfig, manifests, queues, session, sim, workflows
from volcanoweb.cli.context import Context
from volcanoweb.cli.errors import EXIT_SERVER, EXIT_USAGE, CliError
from volcanoweb.cli.output import FORMATS

EXIT_INTERRUPTED = 130


def common_flags() -> argparse.ArgumentParser:
    """Return the flags every command accepts (before or after the command words)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection and output")
    group.add_argument(
        "--server", "--master", "-s", default=argparse.SUPPRESS, help="API server URL (or VOLCANOWEB_SERVER)"
    )
    group.add_argument("--token", default=argparse.SUPPRESS, help="API token (or VOLCANOWEB_TOKEN)")
    group.add_argument(
        "--output", "-o", choices=FORMATS, default=argparse.SUPPRESS, help="print JSON or YAML instead of a table"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    """Return the full ``vcctl`` parser."""
    common = common_flags()
    parser = argparse.ArgumentParser(
        prog="vcctl",
        parents=[common],
        description="Volcano-compatible command-line client for volcanoweb. Configuration: "
        "$XDG_CONFIG_HOME/volcanoweb/config (see vcctl login), VOLCANOWEB_SERVER, VOLCANOWEB_TOKEN.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    jobs.register(sub, common)
    queues.register(sub, common)
    workflows.register(sub, common)
    cronjobs.register(sub, common)
    manifests.register(sub, common)
    sim.register(sub, common)
    session.register(sub, common)
    kubeconfig.register(sub, common)
    return parser


def _report(error: CliError) -> None:
    sys.stderr.write(f"error: {error.message}\n")
    for line in error.details:
        sys.stderr.write(f"  {line}\n")


def run(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.func(Context(args)) or 0)
    except CliError as exc:
        _report(exc)
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (vcctl job list | head): silence the flush at exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # the last resort: a clear line, never a traceback
        if os.environ.get("VCCTL_DEBUG"):
            traceback.print_exc()
        sys.stderr.write(f"error: unexpected failure: {type(exc).__name__}: {exc}\n")
        return EXIT_SERVER


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: exit with :func:`run`'s status."""
    try:
        code = run(argv)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    sys.exit(code)


if __name__ == "__main__":
    main()
