"""``http_request`` is off unless the user enables it, and then reaches only allow-listed hosts.

No socket is opened for a refused request. Redirects are followed only to allowed hosts: every hop
is checked against the policy before it is requested (urllib would follow any host by itself)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from desktop.errors import ToolError

MAX_RESPONSE_CHARS = 6000
TIMEOUT_SECONDS = 15


@dataclass(frozen=True)
class HttpPolicy:
    enabled: bool = False
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    def check(self, url: str) -> None:
        if not self.enabled:
            raise ToolError("http_request is disabled. The user can enable it in Settings with a list of allowed hosts.")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ToolError(f"Only http and https URLs are allowed, not {parts.scheme or 'none'!r}")
        host = (parts.hostname or "").lower()
        if host not in {h.lower() for h in self.allowed_hosts}:
            raise ToolError(f"Host {host!r} is not in the user's allow-list for http_request")

    def request(self, method: str, url: str, payload_json: str) -> str:
        self.check(url)
        method = method.upper()
        if method not in ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"):
            raise ToolError(f"Unsupported HTTP method {method}")
        data = None
        headers = {"User-Agent": "MemDesk"}
        if payload_json and payload_json.strip() and method != "GET":
            try:
                json.loads(payload_json)
            except json.JSONDecodeError as error:
                raise ToolError(f"payload_json is not valid JSON: {error}") from error
            data = payload_json.encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        opener = urllib.request.build_opener(_CheckedRedirects(self))
        try:
            with opener.open(request, timeout=TIMEOUT_SECONDS) as response:
                body = response.read(MAX_RESPONSE_CHARS * 4).decode("utf-8", errors="replace")
                status = response.status
        except urllib.error.HTTPError as error:
            body, status = error.read(2000).decode("utf-8", errors="replace"), error.code
        except (urllib.error.URLError, OSError) as error:
            raise ToolError(f"Request to {url} failed: {error}") from error
        return f"HTTP {status}\n{body[:MAX_RESPONSE_CHARS]}"


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Asks the policy about each redirect target before urllib requests it."""

    def __init__(self, policy: HttpPolicy) -> None:
        super().__init__()
        self._policy = policy

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: PLR0913 - urllib's signature
        try:
            self._policy.check(newurl)
        except ToolError as error:
            fp.close()
            raise ToolError(f"{req.full_url} redirected to {newurl}, which was refused: {error.message}") from error
        return super().redirect_request(req, fp, code, msg, headers, newurl)
