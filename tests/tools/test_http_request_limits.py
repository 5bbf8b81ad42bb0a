"""http_request after the allow-list: an allowed name must not lead to this machine or the local
network, the connection goes to the address that was checked, one deadline bounds the whole
request, and Stop ends it. Every server here listens on 127.0.0.1; names are mapped to addresses by
an injected resolver, so no test depends on /etc/hosts or DNS."""

from __future__ import annotations

import ipaddress
import re
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memdesk.core.base.errors import GenerationCancelled, ToolError
from memdesk.core.runtime.base import CancelToken
from memdesk.core.runtime.scripted import call, say
from memdesk.core.tools.http import HttpPolicy, internal_kind


class Server:
    """A loopback server whose handler is ``respond(handler)``; records each request's path and Host."""

    def __init__(self, respond, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str]] = []
        self.first_byte_sent = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                server.requests.append((self.path, self.headers.get("Host", "")))
                respond(self, server)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def hello(handler, _server) -> None:
    body = b"hello from the intranet"
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def trickle(handler, server, *, total=120, every=0.25) -> None:
    """A byte every ``every`` seconds: each read succeeds long before any per-read timeout."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(total))
    handler.end_headers()
    handler.wfile.flush()
    for _ in range(total):
        try:
            handler.wfile.write(b".")
            handler.wfile.flush()
        except OSError:
            return  # the client hung up
        server.first_byte_sent.set()
        time.sleep(every)


TRICKLE_SECONDS = 120 * 0.25
#: A self-signed certificate (and its key) for intranet.example, valid until 2126.
CERTIFICATE = Path(__file__).parent / "tls" / "intranet.example.pem"


def tls_server_context(names: list[str]) -> ssl.SSLContext:
    """The server's side; ``names`` collects the name each client asked for (SNI)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTIFICATE)
    context.sni_callback = lambda _sock, name, _context: names.append(name)
    return context


def trusting_the_test_certificate() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(CERTIFICATE))


@pytest.fixture
def serve():
    started = []

    def start(respond, tls: ssl.SSLContext | None = None) -> Server:
        started.append(Server(respond, tls))
        return started[-1]

    yield start
    for server in started:
        server.close()


def resolver_for(table: dict[str, str], calls: list[str] | None = None):
    def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        return [table[host]]

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "::1",
        "::ffff:127.0.0.1",
        "10.0.0.7",
        "192.168.1.1",
        "172.16.5.4",
        "169.254.169.254",
        "fe80::1",
        "fd00::5",
        "0.0.0.0",
        "224.0.0.251",
        "ff02::1",
    ],
)
def test_an_allow_listed_name_resolving_to_this_machine_or_the_local_network_is_refused(address, socket_audit):
    policy = HttpPolicy(
        enabled=True, allowed_hosts=frozenset({"api.example"}), resolver=resolver_for({"api.example": address})
    )
    with socket_audit:
        with pytest.raises(ToolError, match="api.example resolves to .*address on this machine or the local network"):
            policy.request("GET", "http://api.example/data", "")
    assert socket_audit.events == []  # refused before any connection


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("100.64.0.1", "shared"),  # carrier-grade NAT: the provider's network, not the internet
        ("100.127.255.254", "shared"),
        ("2002:c0a8:101::1", "192.168.1.1 inside"),  # 6to4 of a private address
        ("2002:7f00:1::", "127.0.0.1 inside"),  # 6to4 of loopback
        ("64:ff9b::a00:7", "10.0.0.7 inside"),  # NAT64 of a private address
        ("::a00:7", "10.0.0.7 inside"),  # IPv4-compatible
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private"),  # Teredo
        ("198.18.0.1", "private"),  # benchmarking
        ("2001:db8::1", "private"),  # documentation
    ],
)
def test_an_address_that_is_not_public_in_any_of_its_forms_is_refused(address, why, socket_audit):
    policy = HttpPolicy(
        enabled=True, allowed_hosts=frozenset({"api.example"}), resolver=resolver_for({"api.example": address})
    )
    with socket_audit:
        with pytest.raises(ToolError, match=f"api.example resolves to .*{re.escape(why)}"):
            policy.request("GET", "http://api.example/data", "")
    assert socket_audit.events == []


def test_a_public_address_carried_in_ipv6_is_not_refused_for_its_form():
    for public in ("2002:5db8:d822::1", "::ffff:93.184.216.34", "93.184.216.34"):  # 93.184.216.34 inside
        assert internal_kind(ipaddress.ip_address(public)) is None


def test_the_name_is_refused_even_when_only_one_of_its_addresses_is_internal(socket_audit):
    resolve = lambda host, port: ["93.184.216.34", "127.0.0.1"]  # noqa: E731
    policy = HttpPolicy(enabled=True, allowed_hosts=frozenset({"api.example"}), resolver=resolve)
    with socket_audit:
        with pytest.raises(ToolError, match="resolves to 127.0.0.1"):
            policy.request("GET", "https://api.example/", "")
    assert socket_audit.events == []


def test_an_internal_address_the_allow_list_names_itself_is_reached_at_that_address_under_the_name(serve, socket_audit):
    """The connection goes to the address that was checked: nothing resolves the name a second
    time (a DNS server could answer differently then), and the server still sees the name."""
    server = serve(hello)
    lookups: list[str] = []
    policy = HttpPolicy(
        enabled=True,
        allowed_hosts=frozenset({"intranet.example", "127.0.0.1"}),
        resolver=resolver_for({"intranet.example": "127.0.0.1"}, lookups),
    )
    with socket_audit:
        answer = policy.request("GET", f"http://intranet.example:{server.port}/page?q=1", "")
    assert answer.startswith("HTTP 200") and "hello from the intranet" in answer
    assert lookups == ["intranet.example"]
    assert not [e for e in socket_audit.events if e.startswith("socket.get")]  # no resolution of its own
    assert [e for e in socket_audit.events if e.startswith("socket.connect")] == [
        f"socket.connect (('127.0.0.1', {server.port}),)"
    ]
    assert server.requests == [("/page?q=1", f"intranet.example:{server.port}")]


def test_https_goes_to_the_checked_address_with_the_name_for_sni_and_the_certificate_check(serve):
    names: list[str] = []
    server = serve(hello, tls=tls_server_context(names))
    policy = HttpPolicy(
        enabled=True,
        allowed_hosts=frozenset({"intranet.example", "other.example", "127.0.0.1"}),
        resolver=resolver_for({"intranet.example": "127.0.0.1", "other.example": "127.0.0.1"}),
        tls_context=trusting_the_test_certificate,
    )
    answer = policy.request("GET", f"https://intranet.example:{server.port}/page", "")
    assert answer.startswith("HTTP 200") and "hello from the intranet" in answer
    assert names == ["intranet.example"] and server.requests == [("/page", f"intranet.example:{server.port}")]
    # The same address under a name the certificate does not carry: refused by the certificate check.
    with pytest.raises(ToolError, match="certificate"):
        policy.request("GET", f"https://other.example:{server.port}/page", "")
    assert len(server.requests) == 1


def test_a_redirect_to_an_allowed_name_resolving_to_the_local_network_is_refused(serve, socket_audit):
    def redirect(handler, _server) -> None:
        handler.send_response(302)
        handler.send_header("Location", "http://cdn.example/file")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    server = serve(redirect)
    policy = HttpPolicy(
        enabled=True,
        allowed_hosts=frozenset({"127.0.0.1", "cdn.example"}),
        resolver=resolver_for({"cdn.example": "10.1.2.3"}),
    )
    with socket_audit:
        with pytest.raises(ToolError, match="cdn.example resolves to 10.1.2.3, a private address"):
            policy.request("GET", f"http://127.0.0.1:{server.port}/start", "")
    assert server.requests == [("/start", f"127.0.0.1:{server.port}")]
    assert not [e for e in socket_audit.events if "10.1.2.3" in e]


def test_one_deadline_bounds_the_whole_request_however_steadily_bytes_trickle_in(serve):
    server = serve(trickle)
    deadline = 1.0
    policy = HttpPolicy(enabled=True, allowed_hosts=frozenset({"127.0.0.1"}), deadline_seconds=deadline)
    started = time.monotonic()
    with pytest.raises(ToolError, match="took longer than 1 s in all"):
        policy.request("GET", f"http://127.0.0.1:{server.port}/slow", "")
    elapsed = time.monotonic() - started
    assert server.first_byte_sent.is_set()
    assert deadline <= elapsed < TRICKLE_SECONDS / 2  # cut at the deadline, not when the server finished


def test_the_deadline_cuts_an_https_request_too(serve):
    server = serve(trickle, tls=tls_server_context([]))
    deadline = 1.0
    policy = HttpPolicy(
        enabled=True,
        allowed_hosts=frozenset({"intranet.example", "127.0.0.1"}),
        deadline_seconds=deadline,
        resolver=resolver_for({"intranet.example": "127.0.0.1"}),
        tls_context=trusting_the_test_certificate,
    )
    started = time.monotonic()
    with pytest.raises(ToolError, match="took longer than 1 s in all"):
        policy.request("GET", f"https://intranet.example:{server.port}/slow", "")
    assert server.first_byte_sent.is_set()
    assert deadline <= time.monotonic() - started < TRICKLE_SECONDS / 2


def test_stop_ends_a_request_in_progress(serve):
    server = serve(trickle)
    deadline = 60.0
    policy = HttpPolicy(enabled=True, allowed_hosts=frozenset({"127.0.0.1"}), deadline_seconds=deadline)
    cancel = CancelToken()

    def stop_once_bytes_flow() -> None:
        server.first_byte_sent.wait(deadline)
        cancel.cancel()

    threading.Thread(target=stop_once_bytes_flow, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(GenerationCancelled):
        policy.request("GET", f"http://127.0.0.1:{server.port}/slow", "", cancel=cancel)
    assert cancel.cancelled and time.monotonic() - started < deadline / 4


def test_stop_ends_the_agents_http_request_and_the_turn(serve, runtime, make_agent):
    server = serve(trickle)
    agent = make_agent()
    deadline = 60.0
    agent.http = HttpPolicy(enabled=True, allowed_hosts=frozenset({"127.0.0.1"}), deadline_seconds=deadline)
    runtime.enqueue(
        call("http_request", "fetch", False, method="GET", url=f"http://127.0.0.1:{server.port}/slow", payload_json=""),
        say("ok"),
    )
    cancel = CancelToken()
    threading.Thread(target=lambda: (server.first_byte_sent.wait(deadline), cancel.cancel()), daemon=True).start()
    started = time.monotonic()
    with pytest.raises(GenerationCancelled):
        agent.send_user_message("fetch it", cancel=cancel)
    assert time.monotonic() - started < deadline / 4
