"""Fixtures for the runtime tests: the real bundled model, loaded once per session."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from memdesk.core.base.settings_table import Settings
from memdesk.core.models.bundled import default_model_path
from memdesk.core.runtime.base import ChatMessage, ToolSpec
from memdesk.core.runtime.openai_http import OpenAIHttpRuntime, OpenAISettings

HEARTBEAT = {"type": "boolean", "description": "Request an immediate heartbeat after the function runs."}

TOOLS = [
    ToolSpec(
        "send_message",
        "Send a message to the user.",
        {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message text."}},
            "required": ["message"],
        },
    ),
    ToolSpec(
        "core_memory_append",
        "Append to a block of core memory.",
        {
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": ["persona", "human"]},
                "content": {"type": "string"},
                "request_heartbeat": HEARTBEAT,
            },
            "required": ["label", "content", "request_heartbeat"],
        },
    ),
    ToolSpec(
        "archival_memory_search",
        "Search archival memory.",
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "page": {"type": "integer"}, "request_heartbeat": HEARTBEAT},
            "required": ["query", "request_heartbeat"],
        },
    ),
    ToolSpec(
        "pause_heartbeats",
        "Pause timed heartbeats.",
        {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
    ),
]
HEARTBEAT_TOOLS = frozenset({"core_memory_append", "archival_memory_search"})


def system_prompt(tools=TOOLS) -> str:
    lines = [
        "You are Sam, a helpful companion with long-term memory.",
        'Answer every turn with exactly one JSON object: {"function": NAME, "params": {"inner_thoughts": "...", ...}}.',
        "Functions:",
    ]
    lines += [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools]
    return "\n".join(lines)


def conversation(user_text: str) -> list[ChatMessage]:
    return [ChatMessage("system", system_prompt()), ChatMessage("user", user_text)]


@pytest.fixture(scope="session")
def model_path():
    return default_model_path()


@pytest.fixture(scope="session")
def llama(model_path):
    from memdesk.core.runtime.llamacpp.runtime import LlamaCppRuntime
    from memdesk.core.runtime.llamacpp.settings import LlamaSettings

    runtime = LlamaCppRuntime(LlamaSettings.from_settings(Settings(context_size=4096), model_path))
    yield runtime
    runtime.close()


# --- an OpenAI-compatible server on loopback: llama-cpp-python's own, serving the bundled model ---
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def server(model_path, tmp_path_factory):
    port = free_port()
    log = (tmp_path_factory.mktemp("server") / "server.log").open("w")
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        "1",
    ]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(base + "/models", timeout=2).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"llama_cpp.server did not start; see {log.name}")
            time.sleep(0.3)
    yield base
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture
def http(server):
    return OpenAIHttpRuntime(
        OpenAISettings.from_settings(Settings(openai_base_url=server, openai_schema="json_object", context_size=4096))
    )
