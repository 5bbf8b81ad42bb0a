"""http_request is refused unless enabled, and then reaches only allow-listed hosts."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from desktop.core.runtime.scripted import call, say
from desktop.core.tools.http import HttpPolicy
from desktop.errors import ToolError
from desktop.settings import Settings


class NoSockets:
    """Fails the test if anything opens a socket."""

    def __enter__(self):
        self._original = socket.socket.connect

        def refuse(*args, **kwargs):
            raise AssertionError("a socket was opened")

        socket.socket.connect = refuse
        return self

    def __exit__(self, *exc):
        socket.socket.connect = self._original


def test_disabled_by_default_and_refused_without_touching_the_network(services, runtime, make_agent):
    agent = make_agent()
    assert Settings().http_enabled is False
    runtime.enqueue(call("http_request", "fetch", False, method="GET", url="http://127.0.0.1:9/x", payload_json=""), say("ok"))
    with NoSockets():
        result = agent.send_user_message("fetch something")
    assert not result.steps[0].ok and "disabled" in result.steps[0].result


def test_hosts_outside_the_allow_list_are_refused():
    policy = HttpPolicy(enabled=True, allowed_hosts=frozenset({"example.org"}))
    with NoSockets():
        with pytest.raises(ToolError, match="allow-list"):
            policy.request("GET", "http://127.0.0.1:9/", "")
        with pytest.raises(ToolError, match="http and https"):
            policy.request("GET", "file:///etc/passwd", "")


def test_an_allowed_host_is_reached_after_consent(services, runtime, make_agent):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from loopback")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        agent = make_agent()
        agent.http = HttpPolicy(enabled=True, allowed_hosts=frozenset({"127.0.0.1"}))
        url = f"http://127.0.0.1:{server.server_port}/greeting"
        runtime.enqueue(call("http_request", "fetch", False, method="GET", url=url, payload_json=""), say("Fetched."))
        result = agent.send_user_message("fetch it")
        assert result.steps[0].ok and "HTTP 200" in result.steps[0].result and "hello from loopback" in result.steps[0].result
    finally:
        server.shutdown()
