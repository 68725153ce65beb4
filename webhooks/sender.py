"""One delivery attempt over HTTP, on the standard library's http.client, to checked addresses.

Why http.client and not urllib3's pools: ``bench/webhooks.py`` runs the worker CPU-bound, and
there urllib3 lost a quarter of the throughput. Its ``HTTPConnection.request`` writes the
headers and the body in two system calls (two segments, two wake-ups of the receiver), and
checks every pooled connection with a ``poll`` before reusing it; http.client writes the
request line, headers and a bytes body in one ``send``. A webhook attempt is one small POST
with no redirect, retry, proxy or decoding to handle, which is all this module needs of it:

- One connection goes to one address ``webhooks.network.checked_addresses`` returned, so
  nothing looks the hostname up again (no second lookup a DNS server could answer
  differently); the URL's hostname is sent as ``Host`` and, for HTTPS, is what SNI and
  certificate verification use.
- Keep-alive connections wait, idle, per (scheme, address, port, hostname), for any thread's
  next attempt (as many as ``SERVICE_WEBHOOK_CONCURRENCY``; more are closed; ``MAX_POOLS``
  destinations at most). One the receiver closed while idle fails its first write or read:
  the attempt is then sent once more, on a new connection.
- http.client follows no redirect and makes one request per call.
- The answer is read up to ``MAX_RESPONSE_BYTES``, and the whole exchange ends at the
  deadline (see ``Watchdog``).
"""

from __future__ import annotations

import functools
import http.client
import os
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.client import HTTPResponse

from django.conf import settings

from webhooks.network import IPAddress, Target

# Read at most this much of a receiver's answer; more closes the connection instead.
MAX_RESPONSE_BYTES = 64 * 1024
MAX_ERROR_LENGTH = 500
# Destinations whose idle connections are kept; the least recently used one's go.
MAX_POOLS = 512
# How often the watchdog checks attempts against their deadline.
WATCH_INTERVAL = 0.25
# A receiver that closed an idle keep-alive connection just as it was reused: once more.
_CLOSED_BY_PEER = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
)


@dataclass(frozen=True)
class Result:
    ok: bool
    status: int | None
    error: str | None


def shorten(text: str) -> str:
    """An error message cut to what a delivery row keeps (MAX_ERROR_LENGTH)."""
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


def _reason(exc: BaseException) -> str:
    """What went wrong, as printable text: http.client quotes a receiver's malformed status
    line as it came, and a NUL or control byte in it must not reach the delivery's row (a
    NUL cannot be stored in PostgreSQL's text at all) or the client reading ``lastError``."""
    text = str(exc) or type(exc).__name__
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Watchdog:
    """Ends attempts that outlive their deadline.

    A socket timeout bounds each read, not the whole answer:
    a receiver sending its headers a byte every few seconds would hold a sending thread for
    hours, and no library offers a deadline for a blocking exchange. So every attempt is
    watched by this one thread; one still running past its deadline has its socket shut down,
    which ends the blocked read at once (the attempt then reads as timed out).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.watched: dict[int, tuple[float, Callable[[], None]]] = {}
        threading.Thread(target=self.run, name="webhook-watchdog", daemon=True).start()

    @contextmanager
    def watching(self, stop: Callable[[], None], deadline: float) -> Iterator[None]:
        key = id(stop)
        with self.lock:
            self.watched[key] = (deadline, stop)
        try:
            yield
        finally:
            with self.lock:
                self.watched.pop(key, None)

    def run(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            now = time.monotonic()
            with self.lock:
                late = [stop for deadline, stop in self.watched.values() if deadline < now]
            for stop in late:
                with suppress(OSError, ValueError):
                    stop()


@functools.cache
def watchdog() -> Watchdog:
    return Watchdog()


class PlainConnection(http.client.HTTPConnection):
    """HTTP to one address, without Nagle's delay (each request is one write)."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class TlsConnection(PlainConnection):
    """HTTPS to one address: TCP to the checked address (as PlainConnection), then TLS
    verified against the URL's hostname (``server_hostname``), not against the address
    connected to."""

    default_port = http.client.HTTPS_PORT

    def __init__(
        self, address: str, port: int, *, timeout: float, tls: ssl.SSLContext, hostname: str
    ) -> None:
        super().__init__(address, port, timeout=timeout)
        self.tls = tls
        self.hostname = hostname

    def connect(self) -> None:
        super().connect()
        self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.hostname)


class Destination:
    """One destination's idle keep-alive connections, taken and given back by any thread."""

    def __init__(self, scheme: str, address: str, port: int, hostname: str) -> None:
        self.scheme = scheme
        self.address = address
        self.port = port
        self.hostname = hostname
        self.idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue(
            maxsize=int(settings.SERVICE_WEBHOOK_CONCURRENCY)
        )
        # Certificates checked against the system's CA bundle as it is when the destination
        # is first sent to, and against the hostname.
        self.tls = ssl.create_default_context() if scheme == "https" else None

    def take(self) -> http.client.HTTPConnection | None:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            return None

    def give(self, connection: http.client.HTTPConnection) -> None:
        try:
            self.idle.put_nowait(connection)
        except queue.Full:
            connection.close()

    def new(self, timeout: float) -> http.client.HTTPConnection:
        if self.tls is not None:
            return TlsConnection(
                self.address, self.port, timeout=timeout, tls=self.tls, hostname=self.hostname
            )
        return PlainConnection(self.address, self.port, timeout=timeout)


@functools.lru_cache(maxsize=MAX_POOLS)
def destination(scheme: str, address: str, port: int, hostname: str) -> Destination:
    """The idle connections of one destination (an evicted one's close as they are freed)."""
    return Destination(scheme, address, port, hostname)


# Sockets and threads do not survive a fork (Celery's prefork pool): a child starts afresh.
os.register_at_fork(after_in_child=destination.cache_clear)
os.register_at_fork(after_in_child=watchdog.cache_clear)


def _shutdown(connection: http.client.HTTPConnection) -> Callable[[], None]:
    def stop() -> None:
        if connection.sock is not None:
            connection.sock.shutdown(socket.SHUT_RDWR)

    return stop


def post(
    target: Target,
    addresses: Sequence[IPAddress],
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,
) -> Result:
    """POST to the first checked address that accepts a connection; a 2xx answered within
    ``timeout`` seconds (connection included) is the only success."""
    deadline = time.monotonic() + timeout
    timed_out = Result(False, None, f"Timed out after {timeout:g} s.")
    last_error = "No address to connect to."
    for address in addresses:
        place = destination(target.scheme, str(address), target.port, target.host)
        connection = place.take()
        reused = connection is not None
        if connection is None:
            connection = place.new(timeout)
            try:
                with watchdog().watching(_shutdown(connection), deadline):
                    connection.connect()
            except ssl.SSLError as exc:
                connection.close()
                return Result(False, None, shorten(f"TLS failed: {_reason(exc)}"))
            except OSError as exc:
                connection.close()
                if isinstance(exc, TimeoutError) or time.monotonic() > deadline:
                    return timed_out
                # Refused or unreachable: another checked address of the host may answer.
                last_error = f"Connection failed: {_reason(exc)}"
                continue
        status: int | None = None
        sent = False  # the request was written: what fails now is reading the answer

        live: http.client.HTTPConnection = connection

        def exchange(live: http.client.HTTPConnection = live) -> HTTPResponse:
            nonlocal sent
            # A bytes body goes out in the same write as the request line and the headers.
            live.request("POST", path, body=body, headers=dict(headers))
            sent = True
            return live.getresponse()

        try:
            with watchdog().watching(_shutdown(connection), deadline):
                try:
                    response = exchange()
                except _CLOSED_BY_PEER:
                    if not reused or time.monotonic() > deadline:
                        raise
                    # Closed while idle: http.client opens a new connection for the request.
                    connection.close()
                    sent = False
                    response = exchange()
                status = response.status
                complete = _drain(response, deadline)
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            if isinstance(exc, TimeoutError) or time.monotonic() > deadline:
                return Result(False, status, timed_out.error)
            verb = "Read" if sent else "Connection"
            return Result(False, status, shorten(f"{verb} failed: {_reason(exc)}"))
        # http.client closes the connection itself when the answer says it will close.
        if complete and connection.sock is not None:
            place.give(connection)
        else:
            connection.close()
        if time.monotonic() > deadline:
            return Result(False, status, timed_out.error)
        if 200 <= response.status < 300:
            return Result(True, status, None)
        note = " (redirects are not followed)" if 300 <= response.status < 400 else ""
        return Result(False, status, f"HTTP {status}{note}.")
    return Result(False, None, shorten(last_error))


def _drain(response: http.client.HTTPResponse, deadline: float) -> bool:
    """Read the (ignored) answer; whether all of it was read, in time and within the cap."""
    received = 0
    while chunk := response.read(16 * 1024):
        received += len(chunk)
        if received > MAX_RESPONSE_BYTES or time.monotonic() > deadline:
            return False
    return True
