"""Where webhooks may be sent: URL rules and the refusal of private addresses (SSRF).

A webhook URL is chosen by a customer, and the service POSTs to it from inside our network,
so a URL naming ``127.0.0.1``, ``169.254.169.254`` (cloud metadata) or a hostname resolving
to a private address would let a customer probe or call our internal services. Unless
``SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS`` is on, such URLs are refused at registration and
at every delivery. At delivery the host is resolved once, every address is checked, and the
connection goes to a checked address (never a second lookup a DNS server could answer
differently), with no redirects followed.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

MAX_URL_LENGTH = 2048
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


# --- The URLs a webhook may be registered with, as one regular expression -----------------
# The document states it and registration enforces it: http(s), an ASCII host name (RFC 3986
# reg-name), an IPv4 address or a bracketed IPv6 address, an optional port (0-65535), path
# and query, and no fragment, spaces or credentials. Every URL it matches, parse_url accepts.
_H16 = "[0-9A-Fa-f]{1,4}"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_IPV6 = "|".join(
    [
        rf"(?:{_H16}:){{7}}{_H16}",
        rf"(?:{_H16}:){{1,7}}:",
        *(rf"(?:{_H16}:){{1,{6 - k}}}(?::{_H16}){{1,{k + 1}}}" for k in range(6)),
        rf":(?:(?::{_H16}){{1,7}}|:)",
        rf"(?:{_H16}:){{6}}{_IPV4}",
        rf"::(?:{_H16}:){{0,5}}{_IPV4}",
        *(rf"(?:{_H16}:){{{k}}}{_H16}::(?:{_H16}:){{0,{4 - k}}}{_IPV4}" for k in range(5)),
    ]
)
# A DNS name: labels of 1 to 63 letters, digits, hyphens or underscores (some internal names
# have them), dot-separated, an optional final dot. Percent-encoding and the other RFC 3986
# sub-delims are not names a resolver can look up: a URL with them would register and then
# fail every delivery.
_REG_NAME = r"(?:[A-Za-z0-9_-]{1,63}\.)*[A-Za-z0-9_-]{1,63}\.?"
# Port 0 can never be connected to.
_PORT = "0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_PCHARS = "[A-Za-z0-9._~!$&'()*+,;=:@%/-]"
URL_PATTERN = (
    rf"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_REG_NAME}|\[(?:{_IPV6})\])(?::(?:{_PORT})?)?"
    rf"(?:/{_PCHARS}*)?(?:\?(?:{_PCHARS}|\?)*)?$"
)


class UrlRefused(Exception):
    """The URL is not a webhook URL we may call; the message says why, for the client."""


# One message for a host that does not resolve, does not resolve in time, or resolves to an
# address we refuse: a message naming the address, or telling "does not exist" from "is
# private", would let a client map our internal DNS by registering names (an oracle).
HOST_REFUSED = (
    "The URL's host must resolve, in time, only to public addresses (private networks are refused)."
)
_MAX_LABEL_LENGTH = 63


@dataclass(frozen=True)
class Target:
    """A parsed webhook URL: what to connect to and what to send as Host and SNI."""

    scheme: str
    host: str  # the hostname as written (lowercased, no brackets), for Host and SNI
    port: int
    request_path: str  # path and query, never empty

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


@functools.lru_cache(maxsize=4096)
def parse_url(url: str) -> Target:
    """Check the URL's shape: http(s), a host, no credentials, at most 2,048 characters.

    Pure, and called for every delivery attempt: cached (a refusal raises, and is not).
    """
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"The URL must be at most {MAX_URL_LENGTH} characters.")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise UrlRefused("The URL must not contain spaces or control characters.")
    if not url.isascii():
        # Refused, never IDNA-encoded behind the client's back: http.client cannot send a
        # non-ASCII request line or Host, so such a URL would fail every delivery. An
        # internationalized host is written in its ASCII (punycode, xn--) form.
        raise UrlRefused(
            "The URL must be ASCII: write an internationalized host name in its xn-- form "
            "and percent-encode the path."
        )
    try:
        parts: SplitResult = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused("The URL is not valid.") from exc
    if parts.scheme not in {"http", "https"}:
        raise UrlRefused("The URL must start with http:// or https://.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UrlRefused("The URL must not contain credentials.")
    host = (parts.hostname or "").lower()
    if not host:
        raise UrlRefused("The URL must name a host.")
    if parts.fragment:
        raise UrlRefused("The URL must not have a fragment.")
    if port == 0:
        raise UrlRefused("The URL's port must be 1 to 65535.")
    if ":" not in host:
        labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
        if any(not label or len(label) > _MAX_LABEL_LENGTH for label in labels) or any(
            c not in _HOST_CHARS for c in host
        ):
            raise UrlRefused(
                "The URL's host must be a DNS name (labels of 1 to 63 letters, digits, "
                "hyphens or underscores) or an IP address."
            )
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(
        scheme=parts.scheme,
        host=host,
        port=port if port is not None else (443 if parts.scheme == "https" else 80),
        request_path=path,
    )


# IPv6 ranges that carry an IPv4 address, and where it sits (RFC 6052, 3056, 4380, 4291, 6145).
# A packet to one of them can end at that IPv4 address (a NAT64 gateway, a 6to4 relay, a
# Teredo relay, a dual-stack host), so the embedded address is judged like an IPv4 target.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
# Refused whatever they carry: networks that are local by definition, which Python's
# ``is_global`` (3.11) does not know as such.
_ALWAYS_REFUSED_V6 = (
    ipaddress.ip_network("fec0::/10"),  # site-local (deprecated, RFC 3879; still routed inside)
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215)
    _TEREDO,  # a tunnel to an IPv4 relay and client; no webhook receiver lives there
    _IPV4_COMPATIBLE,  # deprecated; :: and ::1 are in it too
)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address this IPv6 address carries (none for most)."""
    value = int(address)
    low32 = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in _IPV4_MAPPED or address in _IPV4_TRANSLATED or address in _NAT64:
        return [low32]
    if address in _IPV4_COMPATIBLE:
        return [low32]
    if address in _SIX_TO_FOUR:
        return [ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if address in _TEREDO:
        server, client = address.teredo or (low32, low32)
        return [server, client]
    return []


def address_allowed(address: IPAddress) -> bool:
    """Whether a webhook may be sent to the address: only globally reachable unicast, and for
    an IPv6 address, never one of the local ranges nor one carrying a refused IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in _ALWAYS_REFUSED_V6):
            return False
        embedded = embedded_ipv4(address)
        if embedded:
            return all(address_allowed(inner) for inner in embedded)
    return (
        address.is_global
        and not address.is_multicast
        and not address.is_reserved
        and not address.is_unspecified
        and not address.is_loopback
        and not address.is_link_local
        and not address.is_private
    )


def private_networks_allowed() -> bool:
    return bool(getattr(settings, "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False))


@functools.cache
def _resolver() -> ThreadPoolExecutor:
    """getaddrinfo on threads of its own, so a caller can stop waiting.

    getaddrinfo has no timeout of its own and cannot be interrupted: a slow DNS server would
    hold the caller for as long as the system resolver retries (tens of seconds). The lookup
    runs here; the caller waits at most ``SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS`` and treats a
    late answer as none. The pool is bounded, so hung lookups cannot pile up threads: when all
    are busy, new lookups wait in line and time out, refused like any other unresolved host.
    """
    return ThreadPoolExecutor(max_workers=16, thread_name_prefix="webhook-resolve")


# Threads do not survive a fork (Celery's prefork pool): a child makes its own.
os.register_at_fork(after_in_child=_resolver.cache_clear)


def _lookup(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for info in infos:
        # The scope of a link-local IPv6 address ("fe80::1%eth0") is not part of the address.
        text = str(info[4][0]).split("%", 1)[0]
        address = ipaddress.ip_address(text)
        if address not in addresses:
            addresses.append(address)
    return addresses


def resolve(host: str, port: int, *, timeout: float | None = None) -> list[IPAddress]:
    """Every address of the host (an IP literal is its own single address), within
    ``timeout`` seconds (``SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS`` by default)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if timeout is None:
        timeout = float(getattr(settings, "SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS", 3))
    future = _resolver().submit(_lookup, host, port)
    try:
        addresses = future.result(timeout=timeout)
    except (OSError, UnicodeError, ValueError, FutureTimeout) as exc:
        raise UrlRefused(HOST_REFUSED) from exc
    if not addresses:
        raise UrlRefused(HOST_REFUSED)
    return addresses


def checked_addresses(target: Target) -> list[IPAddress]:
    """Resolve once and check every address; refuse if any one is not allowed.

    Refusing when any address is private (not only the first) keeps a hostname with one
    public and one private record from reaching the private one on a retry or a failover.
    The refusal never says which address, nor whether the host resolved at all.
    """
    addresses = resolve(target.host, target.port)
    if not private_networks_allowed() and not all(map(address_allowed, addresses)):
        raise UrlRefused(HOST_REFUSED)
    return addresses


def validate_webhook_url(url: str) -> Target:
    """Registration: the URL's shape, and with private networks refused, its addresses."""
    target = parse_url(url)
    if not private_networks_allowed():
        checked_addresses(target)
    return target
