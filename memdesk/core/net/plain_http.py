"""A model server reached over plain ``http://`` on another machine receives every prompt, core
memory included, unencrypted over the network. MemDesk allows it (a server on the local network
may have no certificate) but says so wherever the URL is set or used, naming where the prompts
really go: the host, and first the proxy the environment sends them through."""

from __future__ import annotations

from urllib.parse import urlsplit

from memdesk.core.net.loopback import is_loopback, proxy_for


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
    url = url.strip()
    host = urlsplit(url).hostname
    proxy = proxy_for(url)
    route = f"through the proxy {_without_credentials(proxy)} to {host}" if proxy else f"to {host}"
    return (
        f"The model server {url} is reached over plain http: every prompt, your memory included, "
        f"travels unencrypted {route}. Use https, or a server on this machine."
    )


def _without_credentials(proxy: str) -> str:
    """A proxy URL as it may be shown: a password in it stays out of the message."""
    try:
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return "set in the environment"
    if not host:
        return "set in the environment"
    return f"{host}:{port}" if port else host
