"""``vcctl kubeconfig``: write a kubeconfig (server URL, certificate, a new bearer token) for kubectl."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from volcanoweb.cli.context import Context
from volcanoweb.cli.errors import CliError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``kubeconfig``."""
    command = sub.add_parser(
        "kubeconfig",
        parents=[common],
        help="write a kubeconfig for kubectl (with vcctl's API token, or a new one)",
        description="Ask the server for a kubeconfig with its Kubernetes API URL, its certificate and the API "
        "token vcctl uses (--new-token or --name: a new one), and print it or write it to --file (mode 0600). "
        "Its cluster, user and context are named after the server and the user, so several merge: "
        "KUBECONFIG=alice:carol kubectl config get-contexts.",
    )
    command.add_argument("--file", "-f", default="", help="write to this file instead of standard output")
    command.add_argument("--name", default="", help="create a new API token with this name")
    command.add_argument(
        "--new-token", action="store_true", help="create a new API token instead of reusing the one vcctl uses"
    )
    command.set_defaults(func=kubeconfig_command)


def kubeconfig_command(ctx: Context) -> int:
    """``vcctl kubeconfig``."""
    args = ctx.args
    params = {"name": args.name} if args.name else {}
    if args.new_token:
        params["newToken"] = "true"
    config = ctx.client.post("/api/v1/kubeconfig", None, **params)
    if not isinstance(config, dict) or config.get("kind") != "Config":
        raise CliError("the server did not answer a kubeconfig")
    text = yaml.safe_dump(config, sort_keys=False)
    if not args.file:
        sys.stdout.write(text)
        return 0
    target = Path(args.file).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror}") from None
    sys.stdout.write(f"kubeconfig written to {target} (context {config.get('current-context')})\n")
    return 0
