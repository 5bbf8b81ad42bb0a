"""A model server reached over plain ``http://`` on another machine receives every prompt, core
memory included, unencrypted over the network. MemDesk allows it (a server on the local network
may have no certificate) but says so wherever the URL is set or used."""

from __future__ import annotations

from urllib.parse import urlsplit

from memdesk.core.net.loopback import is_loopback


def is_remote_plain_http(url: str) -> bool:
    """Plain http to a host that is not this machine."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() == "http" and bool(parts.hostname) and not is_loopback(url.strip())


def plain_http_warning(url: str) -> str | None:
    """What to tell the user about ``url``; None when it is https or on this machine."""
    if not is_remote_plain_http(url):
        return None
    host = urlsplit(url.strip()).hostname
    return (
        f"The model server {url.strip()} is reached over plain http: every prompt, your memory included, "
        f"travels unencrypted to {host}. Use https, or a server on this machine."
    )
