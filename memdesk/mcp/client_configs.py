"""Connecting another AI app in one step: its configuration for MemDesk's MCP server, where its
configuration file is on this computer, and the change that adds MemDesk to it.

Apps that start servers themselves get a stdio entry running ``memdesk-mcp --app NAME`` (this
installation's own executable, and MEMDESK_HOME when it is set, so the app reaches this data
folder); Open WebUI, which speaks only HTTP, gets the loopback URL and is told to use a token.
Never a passphrase: an encrypted store reaches apps through the running window or the keyring.
A file is changed only after the change was shown: every other entry is kept, a copy of the old
file is kept beside it, and a file that is not plain JSON (comments) is left alone with the
snippet to paste instead.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdesk.core.base.errors import ConfigError, FileTransferError

SERVER_NAME = "memdesk"


@dataclass(frozen=True)
class Client:
    key: str  # what the user types: claude-desktop
    name: str  # the app's name in MemDesk: Claude Desktop
    servers_key: str  # the JSON object holding servers: mcpServers, servers
    files: tuple[str, ...]  # where its configuration is, per platform, with ~ and %APPDATA%
    how: str  # where in the app to find it, for the user
    extra: tuple[tuple[str, Any], ...] = ()  # fields the app's entries carry besides command/args/env


CLIENTS: dict[str, Client] = {
    c.key: c
    for c in (
        Client(
            "claude-desktop",
            "Claude Desktop",
            "mcpServers",
            (
                "~/.config/Claude/claude_desktop_config.json",
                "~/Library/Application Support/Claude/claude_desktop_config.json",
                "%APPDATA%/Claude/claude_desktop_config.json",
            ),
            "Settings > Developer > Edit Config, then restart Claude Desktop",
        ),
        Client("cursor", "Cursor", "mcpServers", ("~/.cursor/mcp.json",), "Settings > MCP, or ~/.cursor/mcp.json"),
        Client(
            "vscode",
            "VS Code",
            "servers",
            (
                "~/.config/Code/User/mcp.json",
                "~/Library/Application Support/Code/User/mcp.json",
                "%APPDATA%/Code/User/mcp.json",
            ),
            "Command Palette > MCP: Open User Configuration",
            (("type", "stdio"),),
        ),
        Client(
            "lmstudio",
            "LM Studio",
            "mcpServers",
            ("~/.lmstudio/mcp.json", "~/.cache/lm-studio/mcp.json"),
            "Program > Install > Edit mcp.json, or open the lmstudio://add_mcp link",
        ),
        Client(
            "jan",
            "Jan",
            "mcpServers",
            (
                "~/.config/Jan/data/mcp_config.json",
                "~/Library/Application Support/Jan/data/mcp_config.json",
                "%APPDATA%/Jan/data/mcp_config.json",
            ),
            "Settings > MCP Servers (turn on Experimental Features first)",
            (("active", True),),
        ),
        Client(
            "anythingllm",
            "AnythingLLM",
            "mcpServers",
            (
                "~/.config/anythingllm-desktop/storage/plugins/anythingllm_mcp_servers.json",
                "~/Library/Application Support/anythingllm-desktop/storage/plugins/anythingllm_mcp_servers.json",
                "%APPDATA%/anythingllm-desktop/storage/plugins/anythingllm_mcp_servers.json",
            ),
            "Agent Skills > MCP Servers, then Refresh",
        ),
        Client("open-webui", "Open WebUI", "", (), "Settings > Tools > add a connection of type MCP (Streamable HTTP)"),
    )
}


def client(key: str) -> Client:
    try:
        return CLIENTS[key.lower()]
    except KeyError:
        raise ConfigError(f"Unknown client {key!r}; choose one of {', '.join(CLIENTS)}") from None


def memdesk_command() -> list[str]:
    """How to start this installation's MCP server: its ``memdesk-mcp`` beside this Python (the
    quickest start: it builds no other command), else ``memdesk mcp`` through this Python."""
    beside = Path(sys.executable).with_name("memdesk-mcp")
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "memdesk.cli.main", "mcp"]


def stdio_entry(target: Client, *, command: list[str] | None = None) -> dict[str, Any]:
    """The server entry ``target`` starts: ``memdesk-mcp --app NAME`` (``command``: another way
    to start the server)."""
    argv = [*(command or memdesk_command()), "--app", target.name]
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    home = os.environ.get("MEMDESK_HOME")
    if home:
        entry["env"] = {"MEMDESK_HOME": str(Path(home).expanduser().resolve())}
    entry.update(dict(target.extra))
    return entry


def http_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


def snippet(target: Client, *, port: int, command: list[str] | None = None) -> dict[str, Any]:
    """What goes into the app's configuration (for Open WebUI: what to type in its form)."""
    if not target.servers_key:
        return {"type": "mcp", "url": http_url(port), "auth": "Bearer", "token": "memdesk mcp token 'Open WebUI'"}
    return {target.servers_key: {SERVER_NAME: stdio_entry(target, command=command)}}


def lmstudio_deeplink(*, command: list[str] | None = None) -> str:
    """LM Studio's one-click link: ``lmstudio://add_mcp?name=...&config=<base64 of the entry>``."""
    entry = stdio_entry(CLIENTS["lmstudio"], command=command)
    encoded = base64.urlsafe_b64encode(json.dumps(entry).encode("utf-8")).decode("ascii")
    return f"lmstudio://add_mcp?name={SERVER_NAME}&config={encoded}"


def _expand(pattern: str) -> Path:
    appdata = os.environ.get("APPDATA")
    if pattern.startswith("%APPDATA%"):
        if not appdata:
            return Path("/nonexistent")
        pattern = appdata + pattern[len("%APPDATA%") :]
    return Path(pattern).expanduser()


def config_file(target: Client) -> Path | None:
    """The app's configuration file on this computer: the first that exists, else the first whose
    folder exists (the app is installed, its file not written yet); None: not found."""
    candidates = [_expand(p) for p in target.files]
    for path in candidates:
        if path.is_file():
            return path
    for path in candidates:
        if path.parent.is_dir():
            return path
    return None


@dataclass(frozen=True)
class ConfigChange:
    path: Path
    before: str
    after: str

    @property
    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{self.path} (now)",
                tofile=f"{self.path} (with MemDesk)",
            )
        )

    @property
    def changes_anything(self) -> bool:
        return self.before != self.after


def plan_change(target: Client, path: Path, *, command: list[str] | None = None) -> ConfigChange:
    """The file with MemDesk's entry added (or brought up to date), every other entry kept."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        data = json.loads(before) if before.strip() else {}
    except json.JSONDecodeError as error:
        raise FileTransferError(
            f"{path} is not plain JSON (line {error.lineno}): it was left as it is",
            hint="add the snippet `memdesk mcp config` prints yourself",
        ) from None
    if not isinstance(data, dict):
        raise FileTransferError(f"{path} does not hold a JSON object: it was left as it is")
    servers = data.get(target.servers_key)
    if servers is None:
        servers = {}
    if not isinstance(servers, dict):
        raise FileTransferError(f"{path}: {target.servers_key} is not a JSON object: the file was left as it is")
    data[target.servers_key] = {**servers, SERVER_NAME: stdio_entry(target, command=command)}
    return ConfigChange(path, before, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def apply_change(change: ConfigChange) -> Path | None:
    """Write the change (atomically); returns the copy of the old file, if there was one."""
    backup = None
    change.path.parent.mkdir(parents=True, exist_ok=True)
    if change.path.exists():
        backup = change.path.with_name(change.path.name + ".before-memdesk")
        shutil.copy2(change.path, backup)
    temporary = change.path.with_name(change.path.name + ".memdesk-tmp")
    temporary.write_text(change.after, encoding="utf-8")
    os.replace(temporary, change.path)
    return backup
