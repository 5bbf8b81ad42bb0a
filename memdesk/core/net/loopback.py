"""Loopback traffic stays on this machine: it never goes through a proxy.

urllib takes ``http_proxy``/``https_proxy`` from the environment for every host that ``no_proxy``
does not name, loopback included; a proxy would then receive the whole prompt, core memory and all,
and could carry it off the machine. Requests to this machine use ``direct_opener`` instead.

"This machine" is every way of naming it that the system resolves to it, not only the usual
spelling: loopback and unspecified addresses (0.0.0.0 and :: connect to the local host) in any
spelling the resolver accepts ("127.1", "2130706433", IPv4-mapped IPv6; see addresses.py), the
``localhost`` names (RFC 6761's ``*.localhost``, and the ``localhost.localdomain``,
``localhost6`` and ``ip6-localhost`` of distributions' hosts files), and every name the hosts
file itself maps to such an address.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from memdesk.core.net.addresses import Address, parse_address

_LOCAL_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "localhost6", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback"}
)
#: The system's hosts file (read at each check: it is small, and may change while MemDesk runs).
HOSTS_FILE = (
    Path(os.environ.get("SYSTEMROOT", r"C:\Windows")) / "System32" / "drivers" / "etc" / "hosts"
    if os.name == "nt"
    else Path("/etc/hosts")
)


def _local_address(address: Address) -> bool:
    # Only the address itself (an IPv4-mapped one is its IPv4 address): a 6to4 or NAT64 form of
    # 127.0.0.1 is routed off the machine, to a relay, and is no reason to skip the proxy.
    return address.is_loopback or address.is_unspecified


def _hosts_file_names() -> frozenset[str]:
    """The names the hosts file maps to a loopback or unspecified address."""
    try:
        text = HOSTS_FILE.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    names: set[str] = set()
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) >= 2 and (address := parse_address(fields[0])) is not None and _local_address(address):
            names.update(name.lower().rstrip(".") for name in fields[1:])
    return frozenset(names)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an address, as a URL holds it) is this machine."""
    host = host.strip().strip("[]").lower()
    address = parse_address(host)
    if address is not None:
        return _local_address(address)
    name = host.rstrip(".")
    if not name:
        return False
    return name in _LOCAL_NAMES or name.endswith(".localhost") or name in _hosts_file_names()


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (see the module's docstring for how it may be named)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and bool(host) and is_loopback_host(host)


def direct_opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """An opener that ignores proxy settings from the environment."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), *handlers)


def opener_for(url: str) -> urllib.request.OpenerDirector:
    """Direct for loopback URLs; elsewhere the environment's proxies apply, as the user set them."""
    return direct_opener() if is_loopback(url) else urllib.request.build_opener()


def proxy_for(url: str) -> str | None:
    """The proxy the environment sends ``url`` through (None: reached directly)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if not parts.hostname or is_loopback(url):
        return None
    proxy = urllib.request.getproxies().get(parts.scheme.lower())
    if not proxy or urllib.request.proxy_bypass(parts.netloc):
        return None
    return proxy
