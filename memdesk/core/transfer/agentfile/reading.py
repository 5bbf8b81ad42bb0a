"""Reading an agent file safely: refuse by size before reading, decode JSON with a clear error,
and tell the formats apart (Letta's AgentFileSchema, MemDesk's own JSON export)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import AgentFileError

#: Largest agent file read. The biggest public .af files are about 1 MB; a MemDesk export of a
#: large archive can reach tens of MB. Parsing JSON needs several times the file's size in memory.
MAX_FILE_BYTES = 200 * 1024 * 1024

LETTA, MEMDESK_JSON = "letta", "memdesk-json"
#: The collections AgentFileSchema requires (``skills`` came later and defaults to empty).
LETTA_REQUIRED = ("agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers")


def read_agent_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> tuple[dict[str, Any], list[str]]:
    """The file's JSON object and the fix-ups made while reading it."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as error:
        raise AgentFileError(f"Cannot read {path}: {error.strerror or error}") from error
    if size > max_bytes:
        raise AgentFileError(
            f"{path.name} is {size / 1024 / 1024:,.0f} MB, more than the {max_bytes / 1024 / 1024:,.0f} MB an agent"
            " file may have",
            hint="this is not an agent file, or it holds more than MemDesk can import at once",
        )
    if size == 0:
        raise AgentFileError(f"{path.name} is empty")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise AgentFileError(f"Cannot read {path}: {error.strerror or error}") from error
    return parse_agent_file(raw, path.name)


def parse_agent_file(raw: bytes, name: str = "the file") -> tuple[dict[str, Any], list[str]]:
    fixups: list[str] = []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AgentFileError(
            f"{name} is not a text file (byte {error.start} is not UTF-8)", hint="choose a .af or .json agent file"
        ) from None
    data = _loads(text, name)
    if isinstance(data, str):
        # Some published .af files hold the JSON document as one JSON string (encoded twice).
        data = _loads(data, name)
        fixups.append("The file held its JSON as a quoted string (encoded twice); it was decoded twice")
    if not isinstance(data, dict):
        raise AgentFileError(f"{name} is JSON but not an agent file (it holds a {type(data).__name__}, not an object)")
    return data, fixups


def _loads(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        truncated = error.pos >= len(text.rstrip()) - 1
        why = (
            "it ends too early (truncated?)"
            if truncated
            else f"{error.msg} at line {error.lineno}, column {error.colno}"
        )
        raise AgentFileError(f"{name} is not valid JSON: {why}", hint="the file may be damaged or incomplete") from None
    except RecursionError:
        raise AgentFileError(f"{name} is nested too deeply to be an agent file") from None


def detect_format(data: dict[str, Any]) -> str:
    if data.get("format") == "memdesk-agent":
        return MEMDESK_JSON
    if isinstance(data.get("agents"), list):
        return LETTA
    raise AgentFileError(
        "This file is neither a Letta agent file (.af: it has no list of agents) nor a MemDesk agent export",
        hint="export the agent again from Letta or MemDesk",
    )
