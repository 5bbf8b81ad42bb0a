"""``memdesk mcp`` in its own process, driven by real peers nobody here wrote: the SDK's client
over stdio and over loopback HTTP, and the MCP Inspector's CLI (installed by ``make mcp-peers``);
and what a misbehaving client does to it: malformed JSON-RPC, a disconnect mid-call."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memdesk.core.storage import open_database
from testing.children import Lines, die_with_parent, end, ended, within
from testing.socket_audit import LOG_ENV, NETWORK, SITE

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
MEMDESK = Path(sys.executable).with_name("memdesk")
#: What a client's configuration starts (memdesk mcp config writes it).
MEMDESK_MCP = Path(sys.executable).with_name("memdesk-mcp")
INSPECTOR = ROOT / ".venv" / "mcp-peers" / "node_modules" / ".bin" / "mcp-inspector"
#: Bound of one command, one client session or one answer: well inside pytest's own timeout even
#: for a test that waits on several, on a loaded machine (a session here takes 2-20 s).
WAIT_S = 120


def _run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MEMDESK), *args],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
        preexec_fn=die_with_parent,
        **kwargs,
    )


@pytest.fixture
def home(services, sam):
    """The test's store (MEMDESK_HOME) with the agent Sam and one thing Sam remembers."""
    services.memory.recall.add(
        sam.id,
        role="user",
        kind="user_message",
        content="We adopted a grey cat named Pixel",
        search_text="We adopted a grey cat named Pixel",
        created_at=services.clock.now(),
    )
    return services.paths.home


def _stdio(app: str) -> StdioServerParameters:
    return StdioServerParameters(command=str(MEMDESK), args=["mcp", "--app", app], env=dict(os.environ))


def test_the_sdk_client_searches_and_appends_over_stdio_and_the_user_approves_in_the_terminal(home, grant, sam):
    grant("Claude Desktop", sam, write=True)

    async def main():
        async with Client(_stdio("Claude Desktop")) as client:
            found = await client.call_tool("memory_search", {"query": "What is the cat called?"})
            asked = await client.call_tool(
                "core_memory_append", {"label": "human", "content": "Has a cat, Pixel", "reason": "said in chat"}
            )
            return found, asked

    found, asked = within(WAIT_S, main())
    assert "Pixel" in found.structured_content["hits"][0]["text"]
    approval = asked.structured_content["approval"]
    listed = _run("mcp", "approvals").stdout
    assert "Claude Desktop -> Sam: core_memory_append" in listed and "said in chat" in listed
    _run("mcp", "approvals", "--apply", str(approval))
    assert "Has a cat, Pixel" in _run("memory", "Sam").stdout
    history = _run("history", "Sam").stdout
    assert "an app over MCP updated human" in history and "Claude Desktop" in history
    log = _run("mcp", "log").stdout
    assert "memory_search" in log and "pending" in log and "Pixel" not in log


def test_the_mcp_inspector_lists_tools_searches_and_appends_through_a_generated_config(home, grant, sam, tmp_path):
    assert INSPECTOR.exists(), "the MCP Inspector is not installed: run make mcp-peers (make test does)"
    grant("Claude Desktop", sam, trusted=True)
    config = tmp_path / "claude_desktop_config.json"
    printed = _run("mcp", "config", "claude-desktop").stdout
    config.write_text("\n".join(line for line in printed.splitlines() if not line.startswith("#")))

    def inspector(*args: str) -> dict:
        env = {**os.environ, "HOME": str(tmp_path), "MCP_INSPECTOR_SECRET_STORE": "memory"}
        done = subprocess.run(
            [str(INSPECTOR), "--cli", "--config", str(config), "--server", "memdesk", *args],
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            env=env,
            check=True,
            preexec_fn=die_with_parent,
        )
        return json.loads(done.stdout)

    tools = {t["name"]: t for t in inspector("--method", "tools/list")["tools"]}
    assert tools["memory_search"]["annotations"]["readOnlyHint"] is True
    assert tools["core_memory_append"]["annotations"]["destructiveHint"] is False
    found = inspector("--method", "tools/call", "--tool-name", "memory_search", "--tool-arg", "query=cat")
    assert "Pixel" in found["structuredContent"]["hits"][0]["text"]
    inspector(
        "--method",
        "tools/call",
        "--tool-name",
        "core_memory_append",
        "--tool-arg",
        "label=human",
        "--tool-arg",
        "content=Owns a grey cat",
        "--tool-arg",
        "reason=the user told the inspector",
    )
    assert "Owns a grey cat" in _run("memory", "Sam").stdout


def test_malformed_json_rpc_gets_an_error_and_the_server_keeps_serving(home, grant, sam):
    grant("raw", sam)
    server = subprocess.Popen(
        [str(MEMDESK_MCP), "--app", "raw"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=die_with_parent,
    )
    with ended(server):
        answered = Lines(server.stdout)
        lines = [
            "this is not json",
            '{"jsonrpc": "2.0", "id": 5, "method": 42}',
            '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",'
            ' "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}',
        ]
        for line in lines:
            server.stdin.write(line + "\n")
        server.stdin.flush()
        answers = [json.loads(answered.next(WAIT_S)) for _ in range(3)]
        assert (answers[0]["id"], answers[0]["error"]["code"]) == (None, -32700)  # parse error
        assert (answers[1]["id"], answers[1]["error"]["code"]) == (5, -32600)  # invalid request, answered
        assert answers[2]["id"] == 1 and "serverInfo" in answers[2]["result"]


def test_a_client_that_disconnects_mid_call_leaves_the_store_intact(home, grant, sam, services):
    grant("flaky", sam, trusted=True)
    server = subprocess.Popen(
        [str(MEMDESK), "mcp", "--app", "flaky"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,
    )
    with ended(server):
        _hang_up_mid_call(server)
    db = open_database(services.paths.database)
    try:
        assert db.scalar("PRAGMA integrity_check") == "ok"
        stored = db.scalar("SELECT COUNT(*) FROM passages WHERE text LIKE '%Moreau%'")
        history = db.scalar("SELECT COUNT(*) FROM memory_history WHERE after LIKE '%Moreau%'")
        assert stored == history  # all or nothing: a passage is never without its history
    finally:
        db.close()


def _hang_up_mid_call(server: subprocess.Popen) -> None:
    """Ask for an archival insert and hang up before its answer; the server must end by itself."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "f", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "archival_memory_insert",
                "arguments": {"content": "Pixel's vet is Dr. Moreau", "reason": "vet"},
            },
        },
    ]
    answers = Lines(server.stdout)
    server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    server.stdin.flush()
    answers.next(WAIT_S)  # the handshake's answer, then hang up before the call's
    server.stdin.close()
    server.stdout.close()
    assert server.wait(timeout=WAIT_S) is not None


def test_the_stdio_server_opens_no_network_socket(home, grant, sam, tmp_path):
    grant("audited", sam)
    log = tmp_path / "sockets.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SITE), os.environ.get("PYTHONPATH", "")]),
        LOG_ENV: str(log),
    }
    params = StdioServerParameters(command=str(MEMDESK), args=["mcp", "--app", "audited"], env=env)

    async def main():
        async with Client(params) as client:
            return await client.call_tool("memory_search", {"query": "cat"})

    assert not within(WAIT_S, main()).is_error
    events = log.read_text()
    assert "start" in events and NETWORK not in events


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serving_http(port: int, log: Path) -> subprocess.Popen:
    """``memdesk mcp --http`` as the running app starts it (ending with our pipe), once it listens."""
    with open(log, "w") as errors:
        server = subprocess.Popen(
            [str(MEMDESK), "mcp", "--http", "--port", str(port), "--end-with-parent"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            preexec_fn=die_with_parent,
        )
    deadline = time.monotonic() + WAIT_S
    while not _listening(port):
        if server.poll() is not None or time.monotonic() > deadline:
            end(server)
            pytest.fail(f"memdesk mcp --http did not listen on {port}: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    return server


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def http_server(home, tmp_path):
    port = _free_port()
    with ended(_serving_http(port, tmp_path / "http.log")):
        yield f"http://127.0.0.1:{port}/mcp", port


def test_http_refuses_a_missing_or_wrong_token_and_a_foreign_host_or_origin(http_server, grant, sam):
    url, port = http_server
    grant("Open WebUI", sam)
    token = _run("mcp", "token", "Open WebUI").stdout.splitlines()[1]
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with httpx2.Client() as http:
        assert http.post(url, json=body).status_code == 401
        assert http.post(url, json=body, headers={"Authorization": "Bearer mdk_wrong"}).status_code == 401
        good = {"Authorization": f"Bearer {token}"}
        assert http.post(url, json=body, headers={**good, "Host": f"rebound.example:{port}"}).status_code == 421
        assert http.post(url, json=body, headers={**good, "Origin": "https://evil.example"}).status_code == 403


def test_the_sdk_client_uses_memory_over_http_with_its_token_until_the_app_is_revoked(http_server, grant, sam):
    url, _port = http_server
    grant("Open WebUI", sam)
    token = _run("mcp", "token", "Open WebUI").stdout.splitlines()[1]

    async def search():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT_S) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool("memory_search", {"query": "cat"})

    assert "Pixel" in within(WAIT_S, search()).structured_content["hits"][0]["text"]
    _run("mcp", "revoke", "Open WebUI")
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails as its transport does: 401
        within(WAIT_S, search())


def test_the_http_server_the_app_started_ends_when_the_app_does(home, tmp_path):
    port = _free_port()
    server = _serving_http(port, tmp_path / "http.log")
    with ended(server):
        server.stdin.close()  # what the system does when the app that holds the pipe ends, even killed
        assert server.wait(timeout=WAIT_S) == 0
        assert not _listening(port)
