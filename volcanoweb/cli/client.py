"""A small HTTP client for the REST API (standard library only, for a fast start) that turns every failure
into a :class:`CliError`.

HTTP 400 and 422 (invalid input) become exit status 2 with one detail line per Status cause;
every other failure (401, 403, 404, 409, 5xx, connection errors, timeouts) exits 1.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from volcanoweb.cli.errors import EXIT_SERVER, EXIT_USAGE, CliError, usage_error

TIMEOUT = 30.0
PAGE = 500
USER_AGENT = "vcctl (volcanoweb)"


def path(*parts: str) -> str:
    """Return ``/api/v1/<parts>`` with each part URL-quoted."""
    return "/api/v1/" + "/".join(quote(p, safe="") for p in parts)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Report redirects as responses instead of following them."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Response:
    """A finished HTTP exchange."""

    url: str
    status: int
    reason: str
    headers: Any
    body: bytes

    def json(self) -> Any:
        """Return the decoded JSON body (None when empty); ValueError when it is not JSON."""
        return json.loads(self.body.decode("utf-8")) if self.body.strip() else None


def build_opener(*handlers: Any) -> urllib.request.OpenerDirector:
    """Return an opener that never follows redirects (proxies from the environment apply, as usual)."""
    return urllib.request.build_opener(_NoRedirect, *handlers)


def send(
    opener: urllib.request.OpenerDirector,
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> Response:
    """Send one request; HTTP error statuses are returned, transport failures raise CliError naming the URL."""
    all_headers = {"User-Agent": USER_AGENT, **(headers or {})}
    request = urllib.request.Request(url, data=body, method=method, headers=all_headers)
    try:
        with opener.open(request, timeout=timeout) as answer:
            return Response(url, answer.status, answer.reason, answer.headers, answer.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return Response(url, exc.code, str(exc.reason), exc.headers, exc.read())
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            raise CliError(f"cannot connect to the server at {url}: connection refused") from None
        if isinstance(reason, TimeoutError):
            raise CliError(f"the server at {url} did not answer within {timeout:g} s") from None
        raise CliError(f"cannot connect to the server at {url}: {reason}") from None
    except TimeoutError:
        raise CliError(f"the server at {url} did not answer within {timeout:g} s") from None
    except (http.client.HTTPException, OSError) as exc:
        raise CliError(f"request to {url} failed: {type(exc).__name__}: {exc}") from None


def status_error(response: Response) -> CliError:
    """Return the CliError for a failed response, using the Kubernetes Status body when there is one."""
    code = response.status
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    message = ""
    details: list[str] = []
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("detail") or "")
        raw = body.get("details")
        extra: dict[str, Any] = raw if isinstance(raw, dict) else {}
        for cause in extra.get("causes") or []:
            if isinstance(cause, dict):
                field, text = cause.get("field") or "", cause.get("message") or ""
                details.append(f"{field}: {text}" if field else str(text))
    if not message:
        lines = response.body.decode("utf-8", "replace").strip().splitlines()
        message = f"{code} {response.reason}" + (f": {lines[0][:200]}" if lines and body is not None else "")
    if code == 401:
        details.append("log in with: vcctl login --server URL --token TOKEN")
    if code >= 500:
        message = f"server error ({code}) at {response.url}: {message}"
    return CliError(message, EXIT_USAGE if code in (400, 422) else EXIT_SERVER, details)


class Client:
    """Talks to one volcanoweb server with an optional Bearer token."""

    def __init__(self, server: str, token: str = "", *, timeout: float = TIMEOUT) -> None:
        if not server:
            raise usage_error(
                "no server configured",
                "use --server URL, set VOLCANOWEB_SERVER, or run: vcctl login --server URL --token TOKEN",
            )
        if not server.startswith(("http://", "https://")):
            raise usage_error(f"invalid server URL {server!r}: it must start with http:// or https://")
        self.server = server.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._opener = build_opener()

    def request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body (None when empty) or raise CliError."""
        headers = dict(self.headers)
        if json_body is not None:
            content = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        if method in ("POST", "PUT") and content is None:
            content = b""
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "", False)}
        full = self.server + url + (f"?{urlencode(clean)}" if clean else "")
        response = send(self._opener, method, full, body=content, headers=headers, timeout=self.timeout)
        if 300 <= response.status < 400:
            where = response.headers.get("Location", "") if response.headers else ""
            raise CliError(f"unexpected redirect ({response.status}) from {full} to {where}")
        if response.status >= 400:
            raise status_error(response)
        try:
            return response.json()
        except (ValueError, UnicodeDecodeError):
            raise CliError(f"the server at {full} did not answer JSON; is it a volcanoweb server?") from None

    def get(self, url: str, **params: Any) -> Any:
        """GET and return JSON."""
        return self.request("GET", url, params=params)

    def post(self, url: str, body: Any = None, **params: Any) -> Any:
        """POST a JSON body (or nothing) and return JSON."""
        return self.request("POST", url, params=params, json_body=body)

    def post_text(self, url: str, text: str, content_type: str = "application/yaml", **params: Any) -> Any:
        """POST a YAML (or JSON) manifest body and return JSON."""
        return self.request("POST", url, params=params, content=text.encode("utf-8"), content_type=content_type)

    def put(self, url: str, body: Any) -> Any:
        """PUT a JSON object and return JSON."""
        return self.request("PUT", url, json_body=body)

    def delete(self, url: str) -> Any:
        """DELETE and return JSON."""
        return self.request("DELETE", url)

    def list_all(self, url: str, **params: Any) -> dict[str, Any]:
        """GET every page of a Kubernetes-style list; return one list object with all the items."""
        items: list[Any] = []
        token = ""
        body: dict[str, Any] = {}
        while True:
            body = self.get(url, limit=PAGE, **params, **({"continue": token} if token else {})) or {}
            items.extend(body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue") or ""
            if not token:
                break
        return {**body, "metadata": {}, "items": items}

    def iter_items(self, url: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Yield every item of a list."""
        yield from self.list_all(url, **params)["items"]
