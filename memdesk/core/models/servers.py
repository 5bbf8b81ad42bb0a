"""Model servers the user already runs on this machine: Ollama and LM Studio.

Nothing here runs by itself: the user asks ("Look for local servers", ``memdesk models servers``)
and only then are the two default ports on the loopback interface tried. A server's models are
used through the OpenAI-compatible runtime (``runtime/openai_http.py``). Whether a server honours
a JSON-schema ``response_format`` (the same guarantee the grammar gives locally) is found out by
asking it for one tiny schema-shaped answer with the chosen model; when it cannot, MemDesk says so
and falls back to checking every call itself (a malformed call goes back to the model as a failed
call, as with any runtime).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from memdesk.core.base.errors import LocalServerError
from memdesk.core.models.library import Choice
from memdesk.core.net.loopback import direct_opener, is_loopback

KNOWN_SERVERS = (("ollama", "Ollama", 11434), ("lmstudio", "LM Studio", 1234))
LOOPBACK = "127.0.0.1"
SCHEMA_STYLES = ("json_schema", "none")
# No proxies: a proxy from the environment would carry a loopback request off the machine.
_OPENER = direct_opener()
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class LocalServer:
    kind: str  # "ollama" | "lmstudio"
    label: str
    base_url: str  # the OpenAI-compatible root, ending in /v1
    models: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "base_url": self.base_url, "models": list(self.models)}


@dataclass(frozen=True)
class SchemaSupport:
    style: str  # "json_schema" (the server enforces the call's shape) | "none"
    note: str


def find_local_servers(*, ports: dict[str, int] | None = None, timeout: float = 1.0) -> list[LocalServer]:
    """The known servers answering on the loopback interface, with their models."""
    found = []
    for kind, label, default_port in KNOWN_SERVERS:
        port = (ports or {}).get(kind, default_port)
        base = f"http://{LOOPBACK}:{port}/v1"
        try:
            models = list_server_models(base, timeout=timeout)
        except LocalServerError:
            continue
        found.append(LocalServer(kind, label, base, tuple(models)))
    return found


def list_server_models(base_url: str, *, timeout: float = 5.0) -> list[str]:
    """The model ids an OpenAI-compatible server offers (``GET /models``)."""
    _require_loopback(base_url)
    data = _request_json(base_url.rstrip("/") + "/models", None, timeout)
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise LocalServerError(f"The server at {base_url} did not list models the OpenAI way (no `data` array)")
    return [str(item["id"]) for item in items if isinstance(item, dict) and "id" in item]


def probe_schema_support(base_url: str, model: str, *, timeout: float = 180.0) -> SchemaSupport:
    """Ask ``model`` for one answer constrained by a small JSON schema and see what comes back.
    The first request may take a while: the server loads the model."""
    _require_loopback(base_url)
    body = {
        "model": model,
        "messages": [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}],
        "max_tokens": 32,
        "temperature": 0,
        "stream": False,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "probe", "strict": True, "schema": _PROBE_SCHEMA},
        },
    }
    try:
        data = _request_json(base_url.rstrip("/") + "/chat/completions", body, timeout)
    except _Rejected as rejected:
        return SchemaSupport(
            "none",
            f"The server refused a JSON-schema response format ({rejected.status}): MemDesk will check each call "
            "itself, and a malformed one goes back to the model as a failed call.",
        )
    try:
        content = data["choices"][0]["message"]["content"]
        answer = json.loads(content)
    except (KeyError, IndexError, TypeError, ValueError):
        answer = None
    if isinstance(answer, dict) and set(answer) == {"ok"} and isinstance(answer["ok"], bool):
        return SchemaSupport(
            "json_schema", "The server enforces JSON schemas: calls keep the same shape guarantee as the local model."
        )
    return SchemaSupport(
        "none",
        "The server accepted a JSON schema but did not follow it: MemDesk will check each call itself, and a "
        "malformed one goes back to the model as a failed call.",
    )


def server_choice(server_label: str, base_url: str, model: str, support: SchemaSupport) -> Choice:
    return Choice(
        f"{model} on {server_label}",
        {"runtime": "openai", "openai_base_url": base_url, "openai_model": model, "openai_schema": support.style},
    )


def choose_on_server(
    kind: str, model: str, *, port: int | None = None, probe_timeout: float = 180.0
) -> tuple[Choice, SchemaSupport]:
    """``ollama:MODEL`` / ``lmstudio:MODEL``: check the server has the model, probe it, and return
    the settings that select it."""
    known = {k: (label, default_port) for k, label, default_port in KNOWN_SERVERS}
    if kind not in known:
        raise LocalServerError(f"Unknown server kind {kind!r}; use one of {', '.join(known)}")
    label, default_port = known[kind]
    base = f"http://{LOOPBACK}:{port or default_port}/v1"
    try:
        models = list_server_models(base)
    except LocalServerError as error:
        raise LocalServerError(
            f"{label} is not answering at {base}: {error.message}", hint=f"Start {label} first."
        ) from error
    if model not in models:
        raise LocalServerError(f"{label} has no model {model!r}", hint=f"It has: {', '.join(models) or 'none'}.")
    support = probe_schema_support(base, model, timeout=probe_timeout)
    return server_choice(label, base, model, support), with_server_notes(kind, support)


def with_server_notes(kind: str, support: SchemaSupport) -> SchemaSupport:
    """What else the user should know about this kind of server."""
    if kind != "ollama":
        return support
    return SchemaSupport(
        support.style,
        support.note + " Ollama cuts prompts longer than its own context length without saying so: set "
        "OLLAMA_CONTEXT_LENGTH to at least MemDesk's context size.",
    )


# --- HTTP -------------------------------------------------------------------------------------------
class _Rejected(LocalServerError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _require_loopback(url: str) -> None:
    if not is_loopback(url):
        raise LocalServerError(
            f"{url} is not on this machine; MemDesk only looks for local servers on the loopback interface"
        )


def _request_json(url: str, body: dict[str, Any] | None, timeout: float) -> Any:
    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "")
            raw = response.read(4 * 1024 * 1024)
    except urllib.error.HTTPError as error:
        detail = error.read(300).decode("utf-8", errors="replace")
        if body is not None and error.code in (400, 415, 422, 501):
            raise _Rejected(error.code, f"The server at {url} answered {error.code}: {detail}") from error
        raise LocalServerError(f"The server at {url} answered {error.code}: {detail}") from error
    except (urllib.error.URLError, OSError) as error:
        raise LocalServerError(f"Nothing answers at {url}: {getattr(error, 'reason', error)}") from error
    if "html" in kind.lower() or raw.lstrip()[:1] == b"<":
        raise LocalServerError(f"The server at {url} answered with a web page (HTML), not the OpenAI-compatible API")
    try:
        return json.loads(raw)
    except ValueError as error:
        raise LocalServerError(f"The server at {url} answered something that is not JSON: {raw[:120]!r}") from error
