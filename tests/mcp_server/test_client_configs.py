"""Connecting an AI app in one step: the configuration each gets, and the change written into its
configuration file only as shown, keeping everything else."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs, urlparse

import pytest

from memdesk.core.base.errors import ConfigError, FileTransferError
from memdesk.mcp.client_configs import (
    CLIENTS,
    apply_change,
    client,
    config_file,
    lmstudio_deeplink,
    plan_change,
    snippet,
)

COMMAND = ["/opt/memdesk/bin/memdesk-mcp"]


@pytest.mark.parametrize("key", [k for k, c in CLIENTS.items() if c.servers_key])
def test_each_app_that_starts_servers_gets_memdesk_mcp_with_its_name_and_no_secret(key, memdesk_home):
    target = client(key)
    entry = snippet(target, port=47730, command=COMMAND)[target.servers_key]["memdesk"]
    assert entry["command"] == COMMAND[0] and entry["args"] == ["--app", target.name]
    assert entry["env"] == {"MEMDESK_HOME": str(memdesk_home.resolve())}
    assert "passphrase" not in json.dumps(entry).lower()


def test_open_webui_gets_the_loopback_url_and_a_token_to_make():
    got = snippet(client("open-webui"), port=47730)
    assert got["url"] == "http://127.0.0.1:47730/mcp" and got["auth"] == "Bearer"


def test_lm_studio_s_deeplink_carries_the_entry():
    link = urlparse(lmstudio_deeplink(command=COMMAND))
    assert (link.scheme, link.netloc) == ("lmstudio", "add_mcp")
    query = parse_qs(link.query)
    entry = json.loads(base64.urlsafe_b64decode(query["config"][0]))
    assert query["name"] == ["memdesk"] and entry["args"][-2:] == ["--app", "LM Studio"]


def test_an_unknown_client_is_named_with_the_known_ones():
    with pytest.raises(ConfigError, match="claude-desktop"):
        client("netscape")


def test_the_change_keeps_every_other_server_and_the_old_file(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {"files": {"command": "fs"}}, "theme": "dark"}))
    change = plan_change(client("claude-desktop"), path, command=COMMAND)
    assert '+    "memdesk": {' in change.diff
    backup = apply_change(change)
    written = json.loads(path.read_text())
    assert set(written["mcpServers"]) == {"files", "memdesk"} and written["theme"] == "dark"
    assert json.loads(backup.read_text())["mcpServers"] == {"files": {"command": "fs"}}
    assert not plan_change(client("claude-desktop"), path, command=COMMAND).changes_anything


def test_a_file_that_is_not_plain_json_is_left_alone(tmp_path):
    path = tmp_path / "mcp.json"
    original = '{\n  // my servers\n  "servers": {}\n}\n'
    path.write_text(original)
    with pytest.raises(FileTransferError, match="not plain JSON"):
        plan_change(client("vscode"), path, command=COMMAND)
    assert path.read_text() == original


def test_the_config_file_is_found_where_the_app_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_file(client("cursor")) is None  # not installed
    (tmp_path / ".cursor").mkdir()
    assert config_file(client("cursor")) == tmp_path / ".cursor" / "mcp.json"


@pytest.mark.processes
def test_the_command_a_client_configuration_starts_serves(memdesk_home):
    import subprocess
    import sys
    from pathlib import Path

    from testing.children import die_with_parent

    server = Path(sys.executable).with_name("memdesk-mcp")
    hello = (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",'
        ' "capabilities": {}, "clientInfo": {"name": "check", "version": "0"}}}\n'
    )
    done = subprocess.run(
        [str(server), "--app", "check"],
        input=hello,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        preexec_fn=die_with_parent,
    )
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "memdesk"


def test_the_command_a_client_configuration_starts_guards_itself_as_every_memdesk_process(monkeypatch):
    """``memdesk-mcp`` has its own short start (not the whole command line): it must still make
    itself undumpable, as ``memdesk`` does, before it opens the store (core/base/process_guard.py)."""
    from memdesk.cli import main, mcp_cmd

    done: list[str] = []
    monkeypatch.setattr(main, "guard_process", lambda: done.append("guarded"))
    monkeypatch.setattr(mcp_cmd, "serve", lambda args: done.append(f"served {args.app}") or 0)
    assert main.mcp_main(["--app", "Cursor"]) == 0
    assert done == ["guarded", "served Cursor"]
