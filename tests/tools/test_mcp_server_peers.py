"""MemDesk's agents using real MCP servers nobody here wrote (the reference servers
``server-everything`` and ``server-memory``, installed by ``make mcp-peers``), and servers that
misbehave: one that crashes, one that hangs, one that floods its output."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from memdesk.core.base.errors import GenerationCancelled
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import call, say
from memdesk.core.tools.mcp_client.connection import fetch_tools
from memdesk.core.tools.mcp_client.servers import McpServers
from memdesk.core.tools.mcp_client.tools import McpLimits, server_tools
from testing.children import die_with_parent, ended

pytestmark = pytest.mark.processes

PEERS = Path(__file__).resolve().parents[2] / ".venv" / "mcp-peers" / "node_modules" / ".bin"


class RecordingConsent:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def allow(self, agent_id: int, tool: str, summary: str) -> bool:
        self.asked.append((tool, summary))
        return True


def _enable(services, agent, name: str, command: list[str]):
    store = McpServers(services.db, services.clock)
    server = store.add(agent.id, name, command=command)
    return store.enable(agent.id, name, fetch_tools(server, seconds=120))


@pytest.fixture
def everything(services):
    assert (PEERS / "mcp-server-everything").exists(), "run make mcp-peers (make test does)"
    agent = services.create_agent("sam")
    return _enable(services, agent, "everything", [str(PEERS / "mcp-server-everything")])


def test_an_agent_calls_a_real_servers_tool_after_asking_and_reads_the_result_as_data(
    services, runtime, make_agent, everything
):
    consent = RecordingConsent()
    agent = make_agent("sam", consent=consent)
    assert "everything__echo" in agent.tools.names() and "everything__get-sum" in agent.tools.names()
    runtime.enqueue(call("everything__echo", "echo it", False, message="hello from MemDesk"), say("done"))
    step = agent.send_user_message("echo please").steps[0]
    assert step.ok, step.result
    assert "hello from MemDesk" in step.result and "not instructions" in step.result
    ((tool, summary),) = consent.asked
    assert tool == "everything__echo" and "hello from MemDesk" in summary


def test_a_real_servers_error_reaches_the_model_as_a_failed_call_and_the_turn_goes_on(
    services, runtime, make_agent, everything
):
    agent = make_agent("sam")
    arguments = {"name": "notes.gz", "data": "ftp://example.invalid/notes.txt"}  # no protocol it takes
    runtime.enqueue(call("everything__gzip-file-as-resource", "zip it", True, **arguments), say("it refused"))
    steps = agent.send_user_message("compress my notes").steps
    assert not steps[0].ok and "Unsupported URL protocol" in steps[0].result  # the server's own words
    assert "not instructions" in steps[0].result  # still quoted as data
    assert len(steps) == 2 and steps[1].ok  # the model read the error and answered


def test_a_slow_tool_is_ended_at_the_timeout_and_the_model_is_told(services, runtime, make_agent, everything):
    agent = make_agent("sam")
    agent.tools.replace(
        next(
            t
            for t in server_tools(everything, McpLimits(seconds=3, chars=1000))[0]
            if t.name.endswith("long-running-operation")
        )
    )
    runtime.enqueue(
        call("everything__trigger-long-running-operation", "wait", False, duration=60, steps=5), say("slow")
    )
    began = time.monotonic()
    step = agent.send_user_message("run the long one").steps[0]
    assert time.monotonic() - began < 60
    assert not step.ok and "did not answer within 3 s" in step.result


def test_stop_ends_a_call_in_progress_and_the_turn(services, runtime, make_agent, everything):
    agent = make_agent("sam")
    cancel = CancelToken()
    threading.Timer(3.0, cancel.cancel).start()
    runtime.enqueue(call("everything__trigger-long-running-operation", "wait", False, duration=60, steps=5), say("x"))
    began = time.monotonic()
    with pytest.raises(GenerationCancelled):
        agent.send_user_message("run the long one", cancel=cancel)
    assert time.monotonic() - began < 45


def test_the_memory_reference_server_keeps_what_the_agent_gives_it(
    services, runtime, make_agent, tmp_path, monkeypatch
):
    assert (PEERS / "mcp-server-memory").exists(), "run make mcp-peers (make test does)"
    store = tmp_path / "graph.jsonl"
    agent_record = services.create_agent("sam")
    command = [sys.executable, "-c", _with_env("MEMORY_FILE_PATH", str(store), str(PEERS / "mcp-server-memory"))]
    _enable(services, agent_record, "kg", command)
    agent = make_agent("sam")
    entity = {"name": "Pixel", "entityType": "cat", "observations": ["grey", "likes boxes"]}
    runtime.enqueue(
        call("kg__create_entities", "store it", True, entities=[entity]),
        call("kg__search_nodes", "find it", True, query="Pixel"),
        say("done"),
    )
    steps = agent.send_user_message("remember my cat").steps
    assert steps[0].ok and steps[1].ok, (steps[0].result, steps[1].result)
    assert "likes boxes" in steps[1].result and "Pixel" in store.read_text()


def _with_env(name: str, value: str, program: str) -> str:
    """A Python one-liner starting ``program`` with one variable set (the SDK gives a stdio server
    its safe default environment, as it should: this is how a server gets a setting of its own)."""
    return f"import os; os.environ[{name!r}] = {value!r}; os.execv({program!r}, [{program!r}])"


@pytest.mark.parametrize(
    ("program", "said"),
    [
        ("import sys; sys.exit(3)", "stopped or closed the connection"),
        ("import time; time.sleep(600)", "did not answer within 4 s"),
        ("import sys\nwhile True: sys.stdout.write('x' * 65536 + '\\n')", "did not answer within 4 s"),
    ],
    ids=["crashes", "hangs", "floods"],
)
def test_a_server_that_crashes_hangs_or_floods_is_a_clear_error_in_the_turn(
    services, runtime, make_agent, program, said
):
    agent_record = services.create_agent("sam")
    store = McpServers(services.db, services.clock)
    store.add(agent_record.id, "bad", command=[sys.executable, "-c", program])
    tool = {"name": "do", "description": "Do it", "inputSchema": {"type": "object", "properties": {}}}
    server = store.enable(agent_record.id, "bad", [tool])
    agent = make_agent("sam")
    agent.tools.replace(server_tools(server, McpLimits(seconds=4, chars=1000))[0][0])
    runtime.enqueue(call("bad__do", "try", False), say("it failed"))
    began = time.monotonic()
    step = agent.send_user_message("use the bad server").steps[0]
    assert time.monotonic() - began < 60
    assert not step.ok and said in step.result


def test_an_agent_uses_a_server_over_streamable_http_by_its_url(services, runtime, make_agent):
    import os
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    loopback = Path(__file__).resolve().parents[2] / "testing" / "mcp_peers" / "loopback.cjs"
    env = {**os.environ, "PORT": str(port), "NODE_OPTIONS": f"--require {loopback}"}
    server = subprocess.Popen(
        [str(PEERS / "mcp-server-everything"), "streamableHttp"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    with ended(server):
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, f"server-everything ended with {server.returncode}"
                assert time.monotonic() < deadline, "server-everything did not listen within 60 s"
                time.sleep(0.2)
        agent_record = services.create_agent("sam")
        store = McpServers(services.db, services.clock)
        added = store.add(agent_record.id, "web", url=f"http://127.0.0.1:{port}/mcp")
        store.enable(agent_record.id, "web", fetch_tools(added, seconds=60))
        consent = RecordingConsent()
        agent = make_agent("sam", consent=consent)
        runtime.enqueue(call("web__echo", "echo", False, message="over http"), say("done"))
        step = agent.send_user_message("echo over http").steps[0]
        assert step.ok and "over http" in step.result
        assert consent.asked and f"http://127.0.0.1:{port}/mcp" in consent.asked[0][1]
