"""A model server on this machine is reached directly, never through the proxy the environment
names: the proxy would receive every prompt, core memory included. A server elsewhere still goes
through the user's proxy. Both servers here are loopback imitations: a recording proxy and an
OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memdesk.core.base.errors import ModelError
from memdesk.core.base.settings_table import Settings
from memdesk.core.net.loopback import is_loopback
from memdesk.core.runtime.base import ChatMessage, TextRequest, sampling
from memdesk.core.runtime.openai_http import OpenAIHttpRuntime, OpenAISettings

SECRET = "core memory: Ada's door code is 4711"


class Recorder:
    """A loopback HTTP server keeping each request line and body; ``answer`` makes the response."""

    def __init__(self, answer) -> None:
        self.seen: list[tuple[str, bytes]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.seen.append((self.requestline, body))
                code, kind, payload = answer()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_stream():
    chunk = {"choices": [{"delta": {"content": "Hello from this machine."}}]}
    return 200, "text/event-stream", f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


def bad_gateway():
    return 502, "text/plain", b"the proxy keeps this"


@pytest.fixture
def proxy(monkeypatch):
    server = Recorder(bad_gateway)
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, server.url)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield server
    server.close()


@pytest.fixture
def model_server():
    server = Recorder(openai_stream)
    yield server
    server.close()


def ask(base_url: str) -> str:
    runtime = OpenAIHttpRuntime(OpenAISettings.from_settings(Settings(openai_base_url=base_url, openai_model="local")))
    return runtime.generate_text(
        TextRequest([ChatMessage("system", SECRET), ChatMessage("user", "Hi")], sampling(Settings(max_answer_tokens=8)))
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_server_on_this_machine_is_reached_without_the_environments_proxy(proxy, model_server, host):
    port = model_server.url.rsplit(":", 1)[1]
    assert ask(f"http://{host}:{port}/v1") == "Hello from this machine."
    assert proxy.seen == []
    assert len(model_server.seen) == 1 and SECRET.encode() in model_server.seen[0][1]


def test_a_server_elsewhere_still_goes_through_the_users_proxy(proxy):
    """What makes the test above mean something: the proxy is in effect in this environment."""
    with pytest.raises(ModelError, match="502"):
        ask("http://models.example:8080/v1")
    assert [line for line, _ in proxy.seen] == ["POST http://models.example:8080/v1/chat/completions HTTP/1.1"]


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.200.3.4/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://LOCALHOST/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://[::ffff:127.0.0.1]:8080/v1", True),
        ("http://192.168.1.20:11434/v1", False),
        ("http://localhost.example.com/v1", False),
        ("https://api.openai.com/v1", False),
        ("not a url", False),
    ],
)
def test_what_counts_as_this_machine(url, loopback):
    assert is_loopback(url) is loopback
