"""http_request is refused unless enabled, and then reaches only allow-listed hosts."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from memdesk.core.base.errors import ToolError
from memdesk.core.base.settings_table import Settings
from memdesk.core.runtime.scripted import call, say
from memdesk.core.tools.http import HttpPolicy


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
    runtime.enqueue(
        call("http_request", "fetch", False, method="GET", url="http://127.0.0.1:9/x", payload_json=""), say("ok")
    )
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
        assert (
            result.steps[0].ok
            and "HTTP 200" in result.steps[0].result
            and "hello from loopback" in result.steps[0].result
        )
    finally:
        server.shutdown()


def _serve(handler_class):
    server = http.server.HTTPServer(("127.0.0.1", 0), handler_class)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_redirect_to_a_host_outside_the_allow_list_is_not_followed():
    """The allowed host answers with a redirect to a host the user never allowed (the same machine
    by another name, on another port): that hop is refused before anything reaches it."""
    reached = []

    class Target(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            reached.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"secret from the other host")

        def log_message(self, *args):
            pass

    target = _serve(Target)

    class Redirector(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302)
            hop = "127.0.0.1" if self.path == "/same-host" else "localhost"
            self.send_header("Location", f"http://{hop}:{target.server_port}/inside")
            self.end_headers()

        def log_message(self, *args):
            pass

    redirector = _serve(Redirector)
    try:
        policy = HttpPolicy(enabled=True, allowed_hosts=frozenset({"127.0.0.1"}))
        with pytest.raises(ToolError, match="redirected to http://localhost:.*allow-list"):
            policy.request("GET", f"http://127.0.0.1:{redirector.server_port}/away", "")
        assert reached == []
        # A hop to an allowed host is followed as before.
        assert "secret from the other host" in policy.request(
            "GET", f"http://127.0.0.1:{redirector.server_port}/same-host", ""
        )
        assert reached == ["/inside"]
    finally:
        redirector.shutdown()
        target.shutdown()
