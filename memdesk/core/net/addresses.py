"""What an address really reaches, whichever way it is spelled.

The system's resolver takes IPv4 addresses in the old spellings of ``inet_aton`` ("127.1",
"0x7f.0.0.1", "2130706433", "0177.0.0.1") that ``ipaddress`` refuses, and an IPv6 address can
carry an IPv4 one that a gateway or tunnel then reaches: IPv4-mapped and -compatible forms, 6to4
(2002::/16), NAT64 (64:ff9b::/96 and 64:ff9b:1::/48) and Teredo (server and client). A check that
reads only the spelling or only the outer address is walked around by the other forms.
"""

from __future__ import annotations

import ipaddress
import re
import socket

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: What ``inet_aton`` accepts: one to four parts, decimal, octal (leading 0) or hex (0x).
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}", re.IGNORECASE)
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


def parse_address(text: str) -> Address | None:
    """``text`` as an IP address the way the system reads it (brackets and a zone id allowed; an
    IPv4-mapped IPv6 address is the IPv4 address it spells); None for a name."""
    text = text.strip().strip("[]").split("%", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        pass
    else:
        mapped = getattr(address, "ipv4_mapped", None)
        return mapped or address
    if _LEGACY_IPV4.fullmatch(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def carried(address: Address) -> tuple[Address, ...]:
    """``address`` and every IPv4 address it carries, outermost first (a mapped address is
    only the IPv4 address it spells)."""
    if isinstance(address, ipaddress.IPv4Address):
        return (address,)
    if address.ipv4_mapped is not None:  # the IPv4 address itself, in IPv6 socket syntax
        return (address.ipv4_mapped,)
    inner: list[Address] = []
    if int(address) >> 32 == 0 and int(address) > 1:  # ::a.b.c.d, IPv4-compatible (not :: or ::1)
        inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        inner.append(address.sixtofour)
    if address.teredo is not None:
        inner.extend(address.teredo)
    if any(address in network for network in _NAT64):
        inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return (address, *inner)
