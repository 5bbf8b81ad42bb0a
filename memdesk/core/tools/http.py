"""``http_request`` is off unless the user enables it, and then reaches only allow-listed hosts at
public addresses, within one deadline the turn's Stop cuts short.

The checks, each before any byte is sent to the host:

* the URL's host name is on the user's allow-list (``check``: no socket at all, so a refused call
  never reaches the network, and this runs before the user is asked);
* the name is resolved once, and an address that is not public (loopback, private, link-local,
  unspecified, multicast, reserved, carrier-grade NAT, whatever else is not globally reachable),
  also when an IPv6 address carries it (mapped, 6to4, NAT64, Teredo), is refused unless the
  allow-list names that very address: an allow-listed name must not become a way into the user's
  router or a local service. The connection goes to the address that was checked, not to a second resolution a DNS
  server could answer differently; the Host header, SNI and the certificate check keep the name;
* every redirect is checked the same way before it is followed (urllib would follow any host).

One deadline covers the whole request (resolution, connection, every read, every redirect): a
server trickling a byte at a time cannot hold the turn longer. A watchdog shuts the socket when
the deadline passes or the user stops the turn, which ends a read blocked in the kernel at once.
"""

from __future__ import annotations

import errno
import http.client
import ipaddress
import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urljoin, urlsplit

from memdesk.core.base.errors import GenerationCancelled, ToolError
from memdesk.core.base.settings_table import Settings
from memdesk.core.net.addresses import Address, carried, parse_address

if TYPE_CHECKING:
    from memdesk.core.runtime.base import CancelToken

MAX_RESPONSE_CHARS = 6000
DEADLINE_SECONDS = 15.0
MAX_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)
_POLL = 0.05  # how often the watchdog looks at the cancel token and the clock
_CONNECTING = {0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, getattr(errno, "WSAEWOULDBLOCK", -1)}

#: ``(host, port) -> addresses``, in the order to try them.
Resolver = Callable[[str, int], Sequence[str]]
T = TypeVar("T")


def system_resolver(host: str, port: int) -> list[str]:
    addresses: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        if sockaddr[0] not in addresses:
            addresses.append(str(sockaddr[0]))
    return addresses


def _address(text: str) -> Address | None:
    return parse_address(text)


#: Kinds of address named in the refusal, checked on the address and on every IPv4 address it
#: carries; then anything else that is not globally reachable (100.64.0.0/10, benchmarking,
#: documentation and protocol ranges, Teredo, ...).
_KINDS = ("loopback", "unspecified", "link_local", "multicast", "private", "reserved", "site_local")
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")


def internal_kind(address: Address) -> str | None:
    """What makes ``address`` one of this machine's or the local network's (or any other address
    that is not public), looking inside the IPv6 forms that carry an IPv4 address (mapped, 6to4,
    NAT64, Teredo); None for a public one."""
    for inner in reversed(carried(address)):  # the carried address first: it names the reason
        for kind in _KINDS:
            if getattr(inner, f"is_{kind}", False):
                return kind.replace("_", "-") + ("" if inner == address else f" ({inner} inside)")
        if inner in _SHARED:
            return "shared (carrier-grade NAT)" + ("" if inner == address else f" ({inner} inside)")
        if not inner.is_global:
            return "non-public" + ("" if inner == address else f" ({inner} inside)")
    return None


@dataclass(frozen=True)
class HttpPolicy:
    """Whether http_request may run and where to. ``enabled`` and ``allowed_hosts`` are settings
    (memdesk/core/base/settings_table.py), so they have no default here: ``from_settings`` takes them
    from a ``Settings``, and ``off`` is the policy of a caller that makes no requests."""

    enabled: bool
    allowed_hosts: frozenset[str]
    #: For the whole request: resolution, connection, all reads, all redirects.
    deadline_seconds: float = DEADLINE_SECONDS
    resolver: Resolver = field(default=system_resolver, compare=False, repr=False)
    #: The system's trusted certificates; tests trust a certificate of their own.
    tls_context: Callable[[], ssl.SSLContext] = field(default=ssl.create_default_context, compare=False, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpPolicy:
        return cls(settings.http_enabled, frozenset(settings.http_allowlist))

    @classmethod
    def off(cls) -> HttpPolicy:
        return cls(enabled=False, allowed_hosts=frozenset())

    def check(self, url: str) -> None:
        """The URL's scheme and host name; no socket is opened (the user has not been asked yet)."""
        if not self.enabled:
            raise ToolError(
                "http_request is disabled. The user can enable it in Settings with a list of allowed hosts."
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ToolError(f"Only http and https URLs are allowed, not {parts.scheme or 'none'!r}")
        host = (parts.hostname or "").lower()
        if host not in {h.lower() for h in self.allowed_hosts}:
            raise ToolError(f"Host {host!r} is not in the user's allow-list for http_request")

    def request(self, method: str, url: str, payload_json: str, *, cancel: CancelToken | None = None) -> str:
        self.check(url)
        method = method.upper()
        if method not in ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"):
            raise ToolError(f"Unsupported HTTP method {method}")
        data = None
        if payload_json and payload_json.strip() and method != "GET":
            try:
                json.loads(payload_json)
            except json.JSONDecodeError as error:
                raise ToolError(f"payload_json is not valid JSON: {error}") from error
            data = payload_json.encode()
        guard = _Guard(self.deadline_seconds, cancel)
        try:
            return self._follow(method, url, data, guard)
        finally:
            guard.close()

    # --- one request, hop by hop ---------------------------------------------------------------
    def _follow(self, method: str, url: str, data: bytes | None, guard: _Guard) -> str:
        first = url
        for _hop in range(MAX_REDIRECTS + 1):
            guard.check(first)
            addresses = self._checked_addresses(url, guard)
            status, location, body = _exchange(method, url, addresses, data, guard, first, self.tls_context)
            if status not in _REDIRECTS or not location:
                return f"HTTP {status}\n{body.decode('utf-8', errors='replace')[:MAX_RESPONSE_CHARS]}"
            target = urljoin(url, location)
            try:
                self.check(target)
            except ToolError as error:
                raise ToolError(f"{url} redirected to {target}, which was refused: {error.message}") from error
            if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
                method, data = "GET", None  # what browsers and urllib do
            url = target
        raise ToolError(f"{first} redirected more than {MAX_REDIRECTS} times; stopped")

    def _checked_addresses(self, url: str, guard: _Guard) -> list[str]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = _port(parts)
        literal = _address(host)
        if literal is not None:
            found = [str(literal)]
        else:
            try:
                found = list(guard.within(lambda: self.resolver(host, port), url))
            except OSError as error:
                raise ToolError(f"Cannot resolve {host}: {error}") from error
        if not found:
            raise ToolError(f"Cannot resolve {host}: no address")
        named = {a for h in self.allowed_hosts if (a := _address(h)) is not None}
        for text in found:
            address = _address(text)
            if address is None:
                raise ToolError(f"{host} resolved to {text!r}, which is not an IP address")
            kind = internal_kind(address)
            if kind is not None and not named.intersection(carried(address)):
                raise ToolError(
                    f"{host} resolves to {address}, a {kind} address on this machine or the local network; "
                    "http_request reaches such an address only when the user's allow-list names the address itself"
                )
        return found


def _port(parts) -> int:
    try:
        port = parts.port
    except ValueError as error:
        raise ToolError(f"Bad port in {parts.geturl()}: {error}") from error
    return port or (443 if parts.scheme == "https" else 80)


def _exchange(
    method: str,
    url: str,
    addresses: list[str],
    data: bytes | None,
    guard: _Guard,
    first: str,
    tls: Callable[[], ssl.SSLContext],
) -> tuple[int, str, bytes]:
    """Send one request to the first of ``addresses`` that accepts a connection; status, the
    Location header and the start of the body."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", _port(parts)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"User-Agent": "MemDesk", "Connection": "close"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    connection: http.client.HTTPConnection | None = None
    sock: socket.socket | None = None
    try:
        sock = _connect_any(addresses, port, guard, url)
        if parts.scheme == "https":
            connection = _PinnedHTTPSConnection(host, port, sock, guard, tls())
        else:
            connection = _PinnedConnection(host, port, sock, guard)
        connection.request(method, target, body=data, headers=headers)
        response = connection.getresponse()
        body = response.read(MAX_RESPONSE_CHARS * 4)
        status, location = response.status, response.getheader("Location") or ""
    except (OSError, http.client.HTTPException) as error:
        guard.check(first)  # a socket the watchdog shut: say why
        raise ToolError(f"Request to {url} failed: {error}") from error
    finally:
        if connection is not None:
            connection.close()
        elif sock is not None:
            sock.close()
    guard.check(first)  # a close-delimited body cut by the watchdog reads as a short, clean one
    return status, location, body


def _connect_any(addresses: list[str], port: int, guard: _Guard, url: str) -> socket.socket:
    error: OSError | None = None
    for address in addresses:
        try:
            return _connect(address, port, guard, url)
        except OSError as failed:
            error = failed
    assert error is not None
    raise error


def _connect(address: str, port: int, guard: _Guard, url: str) -> socket.socket:
    """A connection to exactly ``address``, waited for in short slices so Stop and the deadline
    end it promptly."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        code = sock.connect_ex((address, port))
        if code not in _CONNECTING:
            raise OSError(code, f"{errno.errorcode.get(code, code)} connecting to {address}:{port}")
        while True:
            guard.check(url)
            _, writable, _ = select.select([], [sock], [], _POLL)
            if writable:
                break
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, f"{errno.errorcode.get(code, code)} connecting to {address}:{port}")
        # A backstop only: the watchdog cuts the socket at the deadline.
        sock.settimeout(guard.seconds + 1)
        guard.watch(sock)
        return sock
    except BaseException:
        sock.close()
        raise


class _PinnedConnection(http.client.HTTPConnection):
    """http.client on a socket already connected to the checked address; the Host header keeps the name."""

    def __init__(self, host: str, port: int, sock: socket.socket, guard: _Guard) -> None:
        super().__init__(host, port, timeout=guard.seconds + 1)
        self.sock = sock

    def connect(self) -> None:
        raise http.client.HTTPException("the connection was closed")  # never reconnects by itself


class _PinnedHTTPSConnection(_PinnedConnection):
    """TLS over the checked address, with SNI and the certificate checked against the name."""

    def __init__(self, host: str, port: int, sock: socket.socket, guard: _Guard, context: ssl.SSLContext) -> None:
        super().__init__(host, port, sock, guard)
        tls = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
        guard.watch(tls)  # ``sock`` gave its descriptor to ``tls``
        self.sock = tls
        try:
            tls.do_handshake()
        except BaseException:
            self.close()
            raise


class _Guard:
    """One deadline and the turn's cancel token for a whole request, redirects included. A
    watchdog thread shuts the request's sockets when either fires, which wakes a blocked read."""

    def __init__(self, seconds: float, cancel: CancelToken | None) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.cancel = cancel
        self.tripped = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._watchdog: threading.Thread | None = None

    def over(self) -> bool:
        return (self.cancel is not None and self.cancel.cancelled) or time.monotonic() >= self.ends

    def check(self, url: str) -> None:
        if self.cancel is not None and self.cancel.cancelled:
            raise GenerationCancelled(f"Stopped: the request to {url} was cut short")
        if self.tripped or time.monotonic() >= self.ends:
            raise ToolError(f"The request to {url} took longer than {self.seconds:g} s in all and was stopped")

    def within(self, work: Callable[[], T], url: str) -> T:
        """``work()`` (a blocking call such as a DNS lookup), given up on at the deadline or Stop."""
        outcome: list = []

        def run() -> None:
            try:
                outcome.append((True, work()))
            except BaseException as error:  # handed to the caller
                outcome.append((False, error))

        worker = threading.Thread(target=run, daemon=True, name="memdesk-http-resolve")
        worker.start()
        while not outcome:
            self.check(url)
            worker.join(_POLL)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, daemon=True, name="memdesk-http-deadline")
                self._watchdog.start()

    def _watch(self) -> None:
        while not self._done.wait(_POLL):
            if self.over():
                with self._lock:
                    self.tripped = True
                    for sock in self._sockets:
                        try:
                            # The plain socket's shutdown, also for a TLS socket: TLS's own would
                            # touch state the blocked reader is using.
                            socket.socket.shutdown(sock, socket.SHUT_RDWR)
                        except OSError:
                            pass  # closed already
                return

    def close(self) -> None:
        self._done.set()
        if self._watchdog is not None:
            self._watchdog.join()
