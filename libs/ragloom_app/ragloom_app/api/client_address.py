"""The address a request came from, as the login limits count it.

The peer's address, unless the peer is a reverse proxy the admin trusts
(``TRUSTED_PROXIES``): then the address that proxy says it forwarded for, in
``X-Forwarded-For``. Every proxy appends the address it was reached from, so the header
is read from the right, past the trusted proxies, to the first address that is not one of
them: what is left of it was written by the client, and could say anything. So list
proxies only: a client inside a listed network could name any address. An address found
so that is loopback is returned as ``"127.0.0.1 via a proxy"``: it is not this machine's
own client, which alone is spared the per-address limit.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from starlette.requests import Request

__all__ = [
    "MAX_FORWARDED_CHARS",
    "Network",
    "client_address",
    "proxy_networks",
    "request_address",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_FORWARDED_CHARS = 4096
"""Characters of ``X-Forwarded-For`` read (its right end): past them, only what a client wrote."""


def proxy_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """The networks of ``TRUSTED_PROXIES`` entries (an address, or a network such as
    ``10.0.0.0/24``); :class:`ValueError` for one that is neither."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[2001:db8::1]" or "[2001:db8::1]:443"
        text = text[1 : text.index("]")]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)  # "::ffff:10.0.0.2" is 10.0.0.2
    return mapped if mapped is not None else address


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, proxies: Sequence[Network]
) -> bool:
    return address is not None and any(address in network for network in proxies)


def client_address(peer: str, forwarded_for: Sequence[str], proxies: Sequence[Network]) -> str:
    """The client's address for a request from ``peer`` carrying the ``X-Forwarded-For``
    headers ``forwarded_for`` (see the module docstring). Without a trusted proxy as its
    peer, the header is ignored: anyone can send one."""
    nearest = _address(peer)
    if not _trusted(nearest, proxies):
        return peer
    hops = ",".join(forwarded_for)[-MAX_FORWARDED_CHARS:].split(",")
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:  # not written by a proxy: the last one we could read is it
            break
        nearest = address
        if not _trusted(address, proxies):
            break
    if nearest is not None and nearest.is_loopback:
        # Not this machine's own client: a loopback address is spared the per-address
        # limit, and one read through a proxy (or the local proxy itself, reached by a
        # header it could not read) must not be.
        return f"{nearest} via a proxy"
    return str(nearest)


def request_address(request: Request, proxies: Sequence[Network]) -> str:
    """:func:`client_address` of a Starlette ``request`` ("" when the server gives none)."""
    peer = request.client.host if request.client else ""
    return client_address(peer, request.headers.getlist("x-forwarded-for"), proxies)
