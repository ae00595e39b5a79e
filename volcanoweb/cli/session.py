"""``vcctl login``, ``vcctl whoami`` and ``vcctl version``."""

from __future__ import annotations

import argparse
import getpass
import http.cookiejar
import json
import re
import sys
import urllib.request
from importlib import metadata
from typing import Any
from urllib.parse import urlencode

from volcanoweb.cli import config, output
from volcanoweb.cli.client import Client, build_opener, path, send, status_error
from volcanoweb.cli.context import Context
from volcanoweb.cli.errors import CliError, usage_error

_CSRF_INPUT = re.compile(r'name=["\']csrfmiddlewaretoken["\']\s+value=["\']([^"\']+)["\']')


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``login``, ``whoami`` and ``version``."""
    login = sub.add_parser(
        "login",
        parents=[common],
        help="store the server URL and an API token in the config file",
        description="With --token, check the token and store it. Without, ask for a username and password, "
        "sign in to the server and create a new API token named 'vcctl'.",
    )
    login.add_argument("--username", "-u", default="", help="username (prompted when no token is given)")
    login.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    login.add_argument("--namespace", "-n", default="", help="default namespace to store (default: the server's)")
    login.set_defaults(func=login_command)

    whoami = sub.add_parser("whoami", parents=[common], help="show the user, tenants and namespaces of the token")
    whoami.set_defaults(func=whoami_command)

    version = sub.add_parser("version", parents=[common], help="print the client version")
    version.set_defaults(func=version_command)


def client_version() -> str:
    """Return the installed package version."""
    try:
        return metadata.version("volcanoweb")
    except metadata.PackageNotFoundError:
        return "unknown"


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise usage_error("no password: use --token, or --password-stdin to read the password from stdin")
    return getpass.getpass("Password: ")


def _token_from_password(server: str, username: str, password: str) -> str:
    """Sign in through the login form (session + CSRF) and create an API token; return the raw token."""
    login_url = f"{server}/login/"
    jar = http.cookiejar.CookieJar()
    opener = build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = send(opener, "GET", login_url)
    match = _CSRF_INPUT.search(page.body.decode("utf-8", "replace"))
    if page.status != 200 or match is None:
        raise CliError(f"{login_url} offers no password sign-in; create a token in the web UI and use --token")
    form = urlencode({"username": username, "password": password, "csrfmiddlewaretoken": match.group(1)})
    answer = send(
        opener,
        "POST",
        login_url,
        body=form.encode(),
        headers={"Referer": login_url, "Content-Type": "application/x-www-form-urlencoded"},
    )
    if answer.status not in (301, 302, 303):
        raise CliError(f"login to {server} failed: wrong username or password")
    csrf = next((c.value for c in jar if c.name == "csrftoken"), "") or ""
    created = send(
        opener,
        "POST",
        f"{server}{path('tokens')}",
        body=json.dumps({"name": "vcctl"}).encode(),
        headers={
            "X-CSRFToken": csrf,
            "Referer": login_url,
            "Accept": "application/json",
            "Content-Type": "application/json",
        },
    )
    if created.status != 201:
        raise status_error(created)
    try:
        token = (created.json() or {}).get("token")
    except ValueError:
        token = None
    if not token:
        raise CliError(f"{server} created no token")
    return str(token)


def login_command(ctx: Context) -> int:
    """``vcctl login``: verify (or create) a token and store server, token and namespace in the config file."""
    args = ctx.args
    server = ctx.settings.server
    if not server:
        raise usage_error("vcctl login needs --server URL (or VOLCANOWEB_SERVER)")
    token = "" if args.username else ctx.settings.token
    if not token:
        username = args.username
        if not username:
            if not sys.stdin.isatty():
                raise usage_error("no token given: use --token TOKEN, or --username with --password-stdin")
            username = input("Username: ").strip()
        if not username:
            raise usage_error("a username is required")
        Client(server)  # validates the URL before asking for a password
        token = _token_from_password(server.rstrip("/"), username, _password(args))
    who = Client(server, token).get(path("whoami")) or {}
    namespace = args.namespace or str(who.get("defaultNamespace") or "")
    stored = config.write_file({"server": server, "token": token, "namespace": namespace})
    output.write(f"Logged in to {server} as {who.get('username', '?')} (namespace {namespace or 'default'})")
    output.write(f"Configuration saved to {stored}")
    return 0


def whoami_command(ctx: Context) -> int:
    """``vcctl whoami``."""
    who: dict[str, Any] = ctx.client.get(path("whoami")) or {}
    if ctx.output:
        output.emit(who, ctx.output)
        return 0
    output.write(f"Username:           {who.get('username', '')}")
    output.write(f"Platform admin:     {'yes' if who.get('platformAdmin') else 'no'}")
    output.write(f"Default namespace:  {who.get('defaultNamespace', '')}")
    output.write(f"Authentication:     {who.get('authentication', '')}")
    output.write(f"Server:             {ctx.client.server}")
    tenants = who.get("tenants") or []
    output.write("Tenants:")
    if tenants:
        output.table(
            ("  Tenant", "Role", "Namespaces"),
            [["  " + str(t.get("name", "")), t.get("role", ""), ",".join(t.get("namespaces") or [])] for t in tenants],
        )
    else:
        output.write("  <none>")
    return 0


def version_command(ctx: Context) -> int:
    """``vcctl version``: the client version (no server needed)."""
    info = {"clientVersion": client_version(), "apiVersion": "v1"}
    if ctx.output:
        output.emit(info, ctx.output)
    else:
        output.write(f"Client Version: {info['clientVersion']}")
        output.write(f"API Version: {info['apiVersion']}")
    return 0
