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
from memdesk.core.net.plain_http import plain_http_warning
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


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0.0.0.0", "127.1", "2130706433"])
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
        ("http://0.0.0.0:8080/v1", True),  # connects to this machine
        ("http://[::]:8080/v1", True),
        ("http://127.1:8080/v1", True),  # the resolver's short forms of 127.0.0.1
        ("http://0x7f.1/v1", True),
        ("http://0177.0.0.1/v1", True),
        ("http://localhost.localdomain:1234/v1", True),
        ("http://localhost6/v1", True),
        ("http://models.localhost/v1", True),  # RFC 6761
        ("http://[2002:7f00:1::]/v1", False),  # 6to4 goes out to a relay, not to this machine
        ("http://128.1/v1", False),
        ("http://192.168.1.20:11434/v1", False),
        ("http://localhost.example.com/v1", False),
        ("https://api.openai.com/v1", False),
        ("not a url", False),
    ],
)
def test_what_counts_as_this_machine(url, loopback):
    assert is_loopback(url) is loopback


def test_a_name_the_hosts_file_maps_to_this_machine_is_this_machine(tmp_path, monkeypatch):
    from memdesk.core.net import loopback

    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.1.1\tmybox mybox.lan  # this machine\n10.0.0.5 nas\n::1 ip6-box\n", encoding="utf-8")
    monkeypatch.setattr(loopback, "HOSTS_FILE", hosts)
    assert is_loopback("http://mybox:8080/v1") and is_loopback("http://MyBox.lan/v1") and is_loopback("http://ip6-box/")
    assert not is_loopback("http://nas:8080/v1")


def test_the_plain_http_warning_names_the_proxy_the_prompts_go_through(proxy):
    proxy_host = proxy.url.split("//", 1)[1]
    warning = plain_http_warning("http://192.0.2.10:8080/v1")
    assert warning is not None and f"unencrypted through the proxy {proxy_host} to 192.0.2.10" in warning
    # What reaches this machine directly is no remote server, however it is spelled.
    for url in ("http://0.0.0.0:8080/v1", "http://127.1:8080/v1", "http://localhost.localdomain/v1"):
        assert plain_http_warning(url) is None, url


def test_a_proxy_password_stays_out_of_the_warning(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://ada:s3cret@proxy.example:3128")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    warning = plain_http_warning("http://192.0.2.10/v1")
    assert warning is not None and "through the proxy proxy.example:3128" in warning and "s3cret" not in warning
