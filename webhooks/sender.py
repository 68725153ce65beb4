"""One delivery attempt over HTTP, on urllib3's connection pools pinned to checked addresses.

- One urllib3 pool per (scheme, checked address, port, hostname): the pool's host is the IP
  address ``webhooks.network.checked_addresses`` returned, so urllib3 looks nothing up (no
  second lookup a DNS server could answer differently); the URL's hostname is sent as
  ``Host`` and, for HTTPS, is what SNI and certificate verification use (``server_hostname``).
- Keep-alive connections are pooled and reused by any thread (``maxsize`` of them per
  destination kept idle; ``block=False``, so a busy destination opens more rather than wait).
- ``retries=False`` and ``redirect=False``: one request per attempt, no redirect followed.
- The answer is read up to ``MAX_RESPONSE_BYTES``, and the whole exchange ends at the
  deadline (see ``Watchdog``).
"""

from __future__ import annotations

import functools
import http.client
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    HTTPError,
    NewConnectionError,
    ProtocolError,
    SSLError,
)
from urllib3.exceptions import TimeoutError as TimedOut
from urllib3.response import BaseHTTPResponse, HTTPResponse
from urllib3.util import Timeout

from webhooks.network import IPAddress, Target

# Read at most this much of a receiver's answer; more closes the connection instead.
MAX_RESPONSE_BYTES = 64 * 1024
MAX_ERROR_LENGTH = 500
# Destinations whose pools (and idle connections) are kept; the least recently used goes.
MAX_POOLS = 512
# How often the watchdog checks attempts against their deadline.
WATCH_INTERVAL = 0.25
# A receiver that closed an idle keep-alive connection just as it was reused: once more.
_CLOSED_BY_PEER = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class Result:
    ok: bool
    status: int | None
    error: str | None


def shorten(text: str) -> str:
    """An error message cut to what a delivery row keeps (MAX_ERROR_LENGTH)."""
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


def _reason(exc: BaseException) -> str:
    # urllib3 wraps the socket's or the TLS library's error: that one says what happened.
    cause = exc.__cause__ if isinstance(exc, NewConnectionError) and exc.__cause__ else exc
    return str(cause) or type(cause).__name__


class Watchdog:
    """Ends attempts that outlive their deadline.

    A socket timeout (urllib3's ``Timeout`` included) bounds each read, not the whole answer:
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


# The deadline of the attempt running on this thread, for the connection reading its answer.
_deadline: ContextVar[float] = ContextVar("webhook_deadline")


def _watched(sock: socket.socket | None, read: Callable[[], HTTPResponse]) -> HTTPResponse:
    """Wait for the answer's status line and headers, watched against the deadline."""
    if sock is None:
        return read()
    with watchdog().watching(functools.partial(sock.shutdown, socket.SHUT_RDWR), _deadline.get()):
        return read()


class _Connection(HTTPConnection):
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]  # as urllib3 declares it
        return _watched(self.sock, super().getresponse)


class _TlsConnection(HTTPSConnection):
    def getresponse(self) -> HTTPResponse:  # type: ignore[override]  # as urllib3 declares it
        return _watched(self.sock, super().getresponse)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


@functools.lru_cache(maxsize=MAX_POOLS)
def pool(scheme: str, address: str, port: int, hostname: str) -> HTTPConnectionPool:
    """The pool of one destination. An evicted pool's idle sockets close with it."""
    size = int(settings.SERVICE_WEBHOOK_CONCURRENCY)
    if scheme == "https":
        # Certificates are checked against the system's CA bundle (urllib3 loads it), and
        # against the URL's hostname, not the address connected to.
        return _TlsPool(
            address, port, maxsize=size, block=False, retries=False, server_hostname=hostname
        )
    return _Pool(address, port, maxsize=size, block=False, retries=False)


# Sockets and threads do not survive a fork (Celery's prefork pool): a child starts afresh.
os.register_at_fork(after_in_child=pool.cache_clear)
os.register_at_fork(after_in_child=watchdog.cache_clear)


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
    _deadline.set(deadline)
    timed_out = Result(False, None, f"Timed out after {timeout:g} s.")
    last_error = "No address to connect to."
    for address in addresses:
        destination = pool(target.scheme, str(address), target.port, target.host)
        status: int | None = None
        try:
            response = _exchange(destination, path, body, headers, deadline)
            status = response.status
            with watchdog().watching(response.shutdown, deadline):
                _drain(response, deadline)
        except NewConnectionError as exc:
            # Refused or unreachable: another checked address of the host may answer.
            last_error = f"Connection failed: {_reason(exc)}"
            continue
        except SSLError as exc:
            return Result(False, None, shorten(f"TLS failed: {_reason(exc)}"))
        except (HTTPError, OSError, http.client.HTTPException) as exc:
            if isinstance(exc, TimedOut | TimeoutError) or time.monotonic() > deadline:
                return Result(False, status, timed_out.error)
            verb = "Read" if status is not None else "Connection"
            return Result(False, status, shorten(f"{verb} failed: {_reason(exc)}"))
        if time.monotonic() > deadline:
            return Result(False, status, timed_out.error)
        if 200 <= response.status < 300:
            return Result(True, status, None)
        note = " (redirects are not followed)" if 300 <= response.status < 400 else ""
        return Result(False, status, f"HTTP {status}{note}.")
    return Result(False, None, shorten(last_error))


def _exchange(
    destination: HTTPConnectionPool,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    deadline: float,
) -> BaseHTTPResponse:
    def send() -> BaseHTTPResponse:
        return destination.urlopen(
            "POST",
            path,
            body=body,
            headers=headers,
            retries=False,
            redirect=False,
            timeout=Timeout(total=max(deadline - time.monotonic(), 0.001)),
            preload_content=False,
        )

    try:
        return send()
    except ProtocolError as exc:
        closed_by_peer = any(isinstance(arg, _CLOSED_BY_PEER) for arg in exc.args)
        if not closed_by_peer or time.monotonic() > deadline:
            raise
        return send()


def _drain(response: BaseHTTPResponse, deadline: float) -> None:
    """Read the (ignored) answer; a connection that read all of it in time goes back to the
    pool, any other is closed."""
    received = 0
    try:
        while chunk := response.read(16 * 1024):
            received += len(chunk)
            if received > MAX_RESPONSE_BYTES or time.monotonic() > deadline:
                response.close()
                return
    finally:
        response.release_conn()
