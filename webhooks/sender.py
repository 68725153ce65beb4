"""One delivery attempt over HTTP: keep-alive connections to checked addresses.

Built on the standard library's http.client rather than urllib3: http.client sends the request
line, headers and a bytes body in one write, where urllib3 writes the body separately; at
hundreds of requests per second that second system call (and the receiver's second wake-up)
was about 40% of the sending CPU. The connections:

- go to an address ``webhooks.network.checked_addresses`` returned, never to a fresh lookup
  of the hostname; the URL's hostname is sent as ``Host`` and, for HTTPS, is the name SNI
  and certificate verification use;
- are kept alive and reused, per (scheme, address, port, hostname), by any thread;
- follow no redirect (http.client never does).
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from webhooks.network import IPAddress, Target

# Read at most this much of a receiver's answer; more closes the connection instead.
MAX_RESPONSE_BYTES = 64 * 1024
MAX_ERROR_LENGTH = 500
_MAX_IDLE_KEYS = 512
# How often attempts are checked against their deadline.
_REAPER_INTERVAL = 0.25
_RETRYABLE_ON_REUSE = (
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


class _Connection(http.client.HTTPConnection):
    """Plain HTTP to one address, without Nagle's delay (each request is one write)."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _TlsConnection(http.client.HTTPSConnection):
    """TLS to one address, verifying the certificate against the URL's hostname."""

    def __init__(
        self,
        address: str,
        port: int,
        *,
        timeout: float,
        context: ssl.SSLContext,
        server_hostname: str,
    ) -> None:
        super().__init__(address, port, timeout=timeout, context=context)
        self._tls_context = context
        self._server_hostname = server_hostname

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP to the checked address
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._tls_context.wrap_socket(self.sock, server_hostname=self._server_hostname)


_Key = tuple[str, str, int, str]


class Connections:
    """Idle keep-alive connections by destination, shared by the sending threads.

    Made per process (see ``connections()``): sockets do not survive Celery's fork.
    """

    def __init__(self, max_idle: int) -> None:
        self.pid = os.getpid()
        self.max_idle = max_idle
        self.idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self.contexts: dict[_Key, ssl.SSLContext] = {}
        self.lock = threading.Lock()

    def take(self, key: _Key) -> http.client.HTTPConnection | None:
        with self.lock:
            idle = self.idle.get(key)
            return idle.pop() if idle else None

    def give(self, key: _Key, connection: http.client.HTTPConnection) -> None:
        with self.lock:
            if key not in self.idle and len(self.idle) >= _MAX_IDLE_KEYS:
                for stale in self.idle.pop(next(iter(self.idle))):
                    stale.close()
            idle = self.idle.setdefault(key, [])
            if len(idle) < self.max_idle:
                idle.append(connection)
                return
        connection.close()

    def new(self, key: _Key, timeout: float) -> http.client.HTTPConnection:
        scheme, address, port, hostname = key
        if scheme != "https":
            return _Connection(address, port, timeout=timeout)
        with self.lock:
            context = self.contexts.get(key)
            if context is None:
                # Certificate and hostname checks on; the system's CA bundle.
                context = ssl.create_default_context()
                self.contexts[key] = context
        return _TlsConnection(
            address, port, timeout=timeout, context=context, server_hostname=hostname
        )


_connections: Connections | None = None
_connections_lock = threading.Lock()


def connections(max_idle: int) -> Connections:
    global _connections
    with _connections_lock:
        if _connections is None or _connections.pid != os.getpid():
            _connections = Connections(max_idle)
        return _connections


def shorten(text: str) -> str:
    """An error message cut to what a delivery row keeps (MAX_ERROR_LENGTH)."""
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class _Reaper:
    """Ends attempts that outlive their deadline.

    A socket timeout bounds each read, not the whole answer: a receiver sending its headers
    a byte every few seconds would hold a sending thread for hours. Every attempt is watched;
    one still running past its deadline has its socket shut down, which ends the blocked
    read at once (the attempt then reads as timed out).
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.watched: dict[int, tuple[float, http.client.HTTPConnection]] = {}
        threading.Thread(target=self.run, name="webhook-reaper", daemon=True).start()

    @contextmanager
    def watching(self, connection: http.client.HTTPConnection, deadline: float) -> Iterator[None]:
        with self.lock:
            self.watched[id(connection)] = (deadline, connection)
        try:
            yield
        finally:
            with self.lock:
                self.watched.pop(id(connection), None)

    def run(self) -> None:
        while True:
            time.sleep(_REAPER_INTERVAL)
            now = time.monotonic()
            with self.lock:
                late = [c for deadline, c in self.watched.values() if deadline < now]
            for connection in late:
                sock = connection.sock
                if sock is not None:
                    with suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)


_reaper: _Reaper | None = None


def reaper() -> _Reaper:
    global _reaper
    with _connections_lock:
        if _reaper is None or _reaper.pid != os.getpid():
            _reaper = _Reaper()
        return _reaper


def post(
    target: Target,
    addresses: Sequence[IPAddress],
    request: tuple[str, bytes, dict[str, str]],
    *,
    timeout: float,
    pool: Connections,
) -> Result:
    """POST to the first checked address that accepts a connection; a 2xx answered within
    ``timeout`` seconds (connection included) is the only success."""
    deadline = time.monotonic() + timeout
    timed_out = Result(False, None, f"Timed out after {timeout:g} s.")
    last_error = "No address to connect to."
    for address in addresses:
        key = (target.scheme, str(address), target.port, target.host)
        connection = pool.take(key)
        reused = connection is not None
        if connection is None:
            connection = pool.new(key, timeout)
            try:
                connection.connect()
            except TimeoutError:
                connection.close()
                return timed_out
            except ssl.SSLError as exc:
                connection.close()
                return Result(False, None, shorten(f"TLS failed: {_reason(exc)}"))
            except OSError as exc:
                # Refused or unreachable: another checked address of the host may answer.
                connection.close()
                last_error = f"Connection failed: {_reason(exc)}"
                continue
        status: int | None = None
        reusable = False
        try:
            with reaper().watching(connection, deadline):
                try:
                    response = _exchange(connection, *request)
                except _RETRYABLE_ON_REUSE:
                    if not reused or time.monotonic() > deadline:
                        raise
                    # The receiver had closed this idle keep-alive connection: once more, on
                    # a new connection (http.client reconnects a closed one by itself).
                    connection.close()
                    response = _exchange(connection, *request)
                status = response.status
                reusable = _drain(response, deadline)
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            if isinstance(exc, TimeoutError) or time.monotonic() > deadline:
                return Result(False, status, timed_out.error)
            verb = "Read" if status is not None else "Connection"
            return Result(False, status, shorten(f"{verb} failed: {_reason(exc)}"))
        if reusable:
            pool.give(key, connection)
        else:
            connection.close()
        if time.monotonic() > deadline:
            return Result(False, status, timed_out.error)
        if 200 <= response.status < 300:
            return Result(True, status, None)
        note = " (redirects are not followed)" if 300 <= response.status < 400 else ""
        return Result(False, status, f"HTTP {status}{note}.")
    return Result(False, None, shorten(last_error))


def _exchange(
    connection: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]
) -> http.client.HTTPResponse:
    # A bytes body goes out in the same write as the headers.
    connection.request("POST", path, body=body, headers=headers)
    return connection.getresponse()


def _drain(response: http.client.HTTPResponse, deadline: float) -> bool:
    """Read the (ignored) answer; whether the connection can carry another request."""
    received = 0
    while chunk := response.read(16 * 1024):
        received += len(chunk)
        if received > MAX_RESPONSE_BYTES or time.monotonic() > deadline:
            return False
    return not response.will_close
