"""Loopback traffic stays on this machine: it never goes through a proxy.

urllib takes ``http_proxy``/``https_proxy`` from the environment for every host that ``no_proxy``
does not name, loopback included; a proxy would then receive the whole prompt, core memory and all,
and could carry it off the machine. Requests to this machine use ``direct_opener`` instead."""

from __future__ import annotations

import ipaddress
import urllib.request
from urllib.parse import urlsplit

_LOOPBACK_NAMES = ("localhost", "localhost.")


def is_loopback_host(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ::1 (an IPv4-mapped ::ffff:127.x too)."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (by ``localhost`` or a loopback address)."""
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
