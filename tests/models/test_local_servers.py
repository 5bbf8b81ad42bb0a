"""Ollama and LM Studio on the loopback interface: found only when asked, their models listed, JSON
schema support probed (and said plainly when missing), a web page instead of the API named."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memdesk.app.services import open_services
from memdesk.cli.main import main
from memdesk.core.base.errors import LocalServerError, ModelError
from memdesk.core.base.paths import Paths
from memdesk.core.base.settings_table import Settings
from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.models import servers
from memdesk.core.runtime.base import CallRequest, ChatMessage, TextRequest, sampling
from memdesk.core.runtime.openai_http import OpenAIHttpRuntime, OpenAISettings
from tests.runtime.conftest import HEARTBEAT_TOOLS, TOOLS


class FakeServer:
    """An OpenAI-compatible server. ``schema``: "enforced" | "rejected" | "ignored"; ``html``: every
    answer is a web page."""

    def __init__(self, models=("qwen3:1.7b",), schema="enforced", html=False) -> None:
        self.models, self.schema, self.html = list(models), schema, html
        self.bodies: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, payload: bytes, kind: str = "application/json") -> None:
                if server.html:
                    code, payload, kind = 200, b"<!doctype html><html><body>Router login</body></html>", "text/html"
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/v1/models":
                    self._send(
                        200,
                        json.dumps(
                            {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
                        ).encode(),
                    )
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                if "response_format" in body and server.schema == "rejected":
                    self._send(400, b'{"error": "response_format is not supported"}')
                    return
                content = '{"ok": true}' if server.schema == "enforced" else "Sure, here you go: ok!"
                if body.get("stream"):
                    events = [
                        {
                            "choices": [
                                {
                                    "delta": {
                                        "content": '{"function": "send_message", "params": '
                                        '{"inner_thoughts": "", "message": "hi"}}'
                                    }
                                }
                            ]
                        }
                    ]
                    payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                    self._send(200, payload.encode(), "text/event-stream")
                    return
                self._send(
                    200, json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def make_server():
    started = []

    def start(**options) -> FakeServer:
        started.append(FakeServer(**options))
        return started[-1]

    yield start
    for server in started:
        server.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_servers_are_found_on_loopback_ports_with_their_models(make_server):
    ollama = make_server(models=("qwen3:1.7b", "llama3.2:3b"))
    found = servers.find_local_servers(ports={"ollama": ollama.port, "lmstudio": free_port()})
    assert [(s.kind, s.models) for s in found] == [("ollama", ("qwen3:1.7b", "llama3.2:3b"))]
    assert found[0].base_url == ollama.base_url


def test_nothing_is_found_when_nothing_listens():
    assert servers.find_local_servers(ports={"ollama": free_port(), "lmstudio": free_port()}) == []


def test_only_the_loopback_interface_is_ever_asked():
    assert servers.is_loopback("http://127.0.0.1:11434/v1") and servers.is_loopback("http://localhost:1234/v1")
    assert servers.is_loopback("http://[::1]:1234/v1")
    assert not servers.is_loopback("http://192.168.1.20:11434/v1")
    with pytest.raises(LocalServerError, match="not on this machine"):
        servers.list_server_models("http://10.0.0.5:11434/v1")


def test_a_server_that_enforces_json_schemas_keeps_the_call_guarantee(make_server):
    server = make_server(schema="enforced")
    support = servers.probe_schema_support(server.base_url, "qwen3:1.7b")
    assert support.style == "json_schema" and "same shape guarantee" in support.note
    assert server.bodies[0]["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("behaviour, said", [("rejected", "refused a JSON-schema"), ("ignored", "did not follow it")])
def test_a_server_without_json_schema_support_is_said_clearly(make_server, behaviour, said):
    server = make_server(schema=behaviour)
    support = servers.probe_schema_support(server.base_url, "qwen3:1.7b")
    assert support.style == "none" and said in support.note and "check each call itself" in support.note


def test_a_server_answering_with_html_is_named(make_server):
    server = make_server(html=True)
    with pytest.raises(LocalServerError, match="web page \\(HTML\\)"):
        servers.list_server_models(server.base_url)


def test_the_runtime_sends_no_schema_to_a_server_that_cannot_use_one(make_server):
    server = make_server(schema="rejected")
    runtime = OpenAIHttpRuntime(
        OpenAISettings.from_settings(
            Settings(openai_base_url=server.base_url, openai_model="qwen3:1.7b", openai_schema="none")
        )
    )
    turn = runtime.generate_call(CallRequest([ChatMessage("user", "hi")], TOOLS, sampling(Settings()), HEARTBEAT_TOOLS))
    assert json.loads(turn.text)["function"] == "send_message"
    assert "response_format" not in server.bodies[-1]


def test_the_runtime_names_a_web_page_instead_of_the_api(make_server):
    server = make_server(html=True)
    runtime = OpenAIHttpRuntime(
        OpenAISettings.from_settings(Settings(openai_base_url=server.base_url, openai_model="m"))
    )
    with pytest.raises(ModelError, match="web page \\(HTML\\)"):
        runtime.generate_text(TextRequest([ChatMessage("user", "hi")], sampling(Settings())))


def test_use_ollama_model_probes_it_and_switches_the_runtime(make_server, monkeypatch, capsys):
    server = make_server(schema="rejected")
    monkeypatch.setattr(
        servers, "KNOWN_SERVERS", (("ollama", "Ollama", server.port), ("lmstudio", "LM Studio", free_port()))
    )
    assert main(["models", "use", "ollama:qwen3:1.7b"]) == 0
    out = capsys.readouterr().out
    assert "Active model: qwen3:1.7b on Ollama" in out and "refused a JSON-schema" in out
    services = open_services(Paths.from_environment(), embedder=HashingEmbedder())
    try:
        settings = services.settings
        assert (settings.runtime, settings.openai_base_url, settings.openai_model, settings.openai_schema) == (
            "openai",
            server.base_url,
            "qwen3:1.7b",
            "none",
        )
    finally:
        services.close()
    assert main(["models", "use", "ollama:mistral"]) == 1
    assert "has no model 'mistral'" in capsys.readouterr().err
