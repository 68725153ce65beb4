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

import ipaddress
import socket
from dataclasses import dataclass
from functools import lru_cache
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
_REG_NAME = "[A-Za-z0-9._~!$&'()*+,;=%-]+"
_PORT = "0*(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_PCHARS = "[A-Za-z0-9._~!$&'()*+,;=:@%/-]"
URL_PATTERN = (
    rf"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_REG_NAME}|\[(?:{_IPV6})\])(?::(?:{_PORT})?)?"
    rf"(?:/{_PCHARS}*)?(?:\?(?:{_PCHARS}|\?)*)?$"
)


class UrlRefused(Exception):
    """The URL is not a webhook URL we may call; the message says why, for the client."""


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


@lru_cache(maxsize=4096)
def parse_url(url: str) -> Target:
    """Check the URL's shape: http(s), a host, no credentials, at most 2,048 characters.

    Pure, and called for every delivery attempt: cached (a refusal raises, and is not).
    """
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"The URL must be at most {MAX_URL_LENGTH} characters.")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise UrlRefused("The URL must not contain spaces or control characters.")
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
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(
        scheme=parts.scheme,
        host=host,
        port=port if port is not None else (443 if parts.scheme == "https" else 80),
        request_path=path,
    )


def address_refusal(address: IPAddress) -> str | None:
    """Why the address may not be called (None when it may): the kinds the contract names,
    and every other non-public range (documentation, shared, reserved)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:127.0.0.1 reaches 127.0.0.1; judge the IPv4 address it carries.
        return address_refusal(address.ipv4_mapped)
    kinds = [
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
        ("non-public", not address.is_global),
    ]
    for name, matches in kinds:
        if matches:
            return f"{address} is a {name} address"
    return None


def private_networks_allowed() -> bool:
    return bool(getattr(settings, "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False))


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address of the host (an IP literal is its own single address)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UrlRefused(f"The host {host} does not resolve.") from exc
    addresses: list[IPAddress] = []
    for info in infos:
        # The scope of a link-local IPv6 address ("fe80::1%eth0") is not part of the address.
        text = str(info[4][0]).split("%", 1)[0]
        address = ipaddress.ip_address(text)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise UrlRefused(f"The host {host} does not resolve.")
    return addresses


def checked_addresses(target: Target) -> list[IPAddress]:
    """Resolve once and check every address; refuse if any one is not allowed.

    Refusing when any address is private (not only the first) keeps a hostname with one
    public and one private record from reaching the private one on a retry or a failover.
    """
    addresses = resolve(target.host, target.port)
    if not private_networks_allowed():
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                raise UrlRefused(
                    f"The host {target.host} is not allowed: {reason}"
                    " (private networks are refused)."
                )
    return addresses


def validate_webhook_url(url: str) -> Target:
    """Registration: the URL's shape, and with private networks refused, its addresses."""
    target = parse_url(url)
    if not private_networks_allowed():
        checked_addresses(target)
    return target
