"""How the API is served: granian runs the WSGI application, a request that outlives
``API_TIMEOUT_SECONDS`` ends its worker process, and no request sees the server's
environment variables.

Every start of the API (`make run`, `make cluster`, the benches, the suite's servers, the
Procfile and the systemd unit) is ``python -m storage_service.serving --bind HOST:PORT``, so
the server's settings are written once, here; only the address differs. A delivery server
(delivery URLs only, docs/operations.md) is the same command with ``--role delivery``.

granian parses HTTP and keeps connections in Rust, and calls the application on a few Python
threads per worker process. gunicorn's threaded worker did that work in Python, for a quarter
of a GET's CPU (docs/performance.md).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from storage_service.env import env_int

logger = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# A query may carry a 1,024-character folder path, a 255-character search and contentType and
# a 2,000-character cursor, each up to 12 bytes a character once URL-encoded: about 24 KiB.
# Longer values reach the application, which refuses them with the API's own 400, up to the
# longest URI the server parses (64 KiB; past it, the server's own 414). The request line and
# headers must fit this buffer.
HEADER_BUFFER_BYTES = 128 * 1024
# A client gets this long to send a request's headers, and an idle kept-alive connection is
# closed after it: a slow client holds a connection, never a Python thread.
HEADER_READ_TIMEOUT_SECONDS = 5
# On SIGTERM, requests in flight get this long to finish before their worker is killed.
GRACEFUL_SECONDS = 8


class RequestTimeout:
    """Ends this worker process when one of its requests has run longer than ``seconds``, as
    gunicorn's worker timeout did: a request stuck in Python (a pathological input, a bug)
    must not hold a thread forever. The server starts a new worker in its place. The
    request's own limits (PostgreSQL's statement_timeout, the store's budget) are all shorter,
    so a request that reaches this one is one no limit foresaw."""

    def __init__(self, application: WsgiApp, seconds: float) -> None:
        self.application = application
        self.seconds = seconds
        self._started: dict[int, float] = {}  # thread id -> when its request started
        self._watching = False
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not self._watching:
            self._watch()
        thread = threading.get_ident()
        self._started[thread] = time.monotonic()
        try:
            return self.application(environ, start_response)
        finally:
            del self._started[thread]

    def _watch(self) -> None:
        # Started on the first request, so in the worker process, never in a parent that forks.
        with self._lock:
            if not self._watching:
                threading.Thread(target=self._watcher, name="request-timeout", daemon=True).start()
                self._watching = True

    def _watcher(self) -> None:
        while True:
            time.sleep(min(1.0, self.seconds / 4))
            started = list(self._started.values())
            if started and time.monotonic() - min(started) > self.seconds:
                logger.critical(
                    "a request ran longer than API_TIMEOUT_SECONDS=%s; stopping worker %s",
                    self.seconds,
                    os.getpid(),
                )
                os.kill(os.getpid(), signal.SIGKILL)


class WithoutServerEnvironment:
    """Hands the application each request's environ without the server process's environment
    variables. granian, like wsgiref, starts every request's environ from a copy of
    ``os.environ``: ``request.META`` would hold the server's secrets (``DATABASE_URL``, keys),
    which Django's error reports print, and a variable named ``HTTP_*`` would read as a
    request header the client never sent.

    A key the request itself set (its headers, the CGI variables) replaced the copy's value
    and stays; a key still holding the environment's value is dropped. (So would a header
    whose value is exactly that of a server variable named like it, which the server's
    environment has no reason to hold.)"""

    def __init__(self, application: WsgiApp) -> None:
        self.application = application
        self._inherited: dict[str, str] | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        inherited = self._inherited
        if inherited is None:
            # Read at the first request, in the worker: the server copies the environment as
            # it is once the application has loaded (settings may have set variables).
            inherited = self._inherited = dict(os.environ)
        for name, value in inherited.items():
            if environ.get(name) == value:
                del environ[name]
        return self.application(environ, start_response)


class ChunkedBody:
    """Gives a body of unknown length (``Transfer-Encoding: chunked``, which the server
    de-chunks) the ``CONTENT_LENGTH`` WSGI asks for, before Django builds the request: Django
    reads a body only up to ``CONTENT_LENGTH``, so without it a chunked JSON request would
    look empty.

    The body is read in small pieces and counted, and at most ``limit`` plus one piece is held:
    past the limit, what was read stands as the body with its length, so that
    ``RequestLimitsMiddleware`` refuses it with the API's 413 (and closes the connection, so
    the unread rest is never taken for a request). PEP 3333 lets a middleware replace
    ``wsgi.input``."""

    PIECE_BYTES = 64 * 1024

    def __init__(self, application: WsgiApp, limit: int) -> None:
        self.application = application
        self.limit = limit

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if (
            not environ.get("CONTENT_LENGTH")
            and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        ):
            stream = environ["wsgi.input"]
            body = bytearray()
            while len(body) <= self.limit and (piece := stream.read(self.PIECE_BYTES)):
                body += piece
            environ["wsgi.input"] = io.BytesIO(bytes(body))
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.application(environ, start_response)


def _cpu_count() -> int:
    # Like nproc: honours CPU affinity (containers, taskset), unlike os.cpu_count().
    return len(os.sched_getaffinity(0)) or 1


def web_workers() -> int:
    """Worker processes: WEB_CONCURRENCY, else one per core (the GIL lets a process use one)."""
    return env_int("WEB_CONCURRENCY", _cpu_count(), minimum=1)


# Threads per worker process when WEB_THREADS is not set, by role. The API's requests wait
# only on PostgreSQL and Redis, briefly: two threads keep the core busy while one waits, and
# each thread more costs every request CPU in the GIL's hand-offs (about 10% of a GET's at
# four). A delivery server's requests may also wait for an image made on demand (at most all
# threads but one, delivery/resolution.py), so it keeps threads for a page's other images
# and one for everyone else.
DEFAULT_THREADS = {"api": 2, "delivery": 4}


def web_role() -> str:
    """What this server answers: SERVICE_ROLE (set by ``--role``), else the API."""
    return os.environ.get("SERVICE_ROLE") or "api"


def web_threads(role: str | None = None) -> int:
    """Threads per worker: WEB_THREADS, else the role's default (DEFAULT_THREADS)."""
    return env_int("WEB_THREADS", DEFAULT_THREADS.get(role or web_role(), 2), minimum=1)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m storage_service.serving", description="Serve the API with granian."
    )
    parser.add_argument("--bind", required=True, metavar="HOST:PORT")
    parser.add_argument(
        "--app", default="storage_service.wsgi:application", help="the WSGI application"
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="worker processes (default: WEB_CONCURRENCY, else one per CPU)",
    )
    parser.add_argument(
        "--role",
        choices=["api", "delivery"],
        help="what this server answers: every route (api), or only delivery URLs and the "
        "probes (delivery); sets SERVICE_ROLE (default: SERVICE_ROLE, else api)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    args = parser.parse_args(argv)
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--bind must be HOST:PORT, got {args.bind!r}")
    args.host, args.port = host.strip("[]"), int(port)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    args = parse_args(argv)
    if args.role is not None:
        # Read by the settings (SERVICE_ROLE) in each worker, which inherits the environment.
        os.environ["SERVICE_ROLE"] = args.role
    Granian(
        args.app,
        address=args.host,
        port=args.port,
        interface=Interfaces.WSGI,
        workers=args.workers or web_workers(),
        blocking_threads=web_threads(args.role),
        http=HTTPModes.http1,
        websockets=False,
        http1_settings=HTTP1Settings(
            header_read_timeout=HEADER_READ_TIMEOUT_SECONDS * 1000,
            keep_alive=True,
            max_buffer_size=HEADER_BUFFER_BYTES,
        ),
        log_level=LogLevels(args.log_level),
        log_access=False,  # the service logs each request itself, as one JSON line
        respawn_failed_workers=True,  # a worker ended by RequestTimeout is replaced
        respawn_interval=0.5,
        workers_kill_timeout=GRACEFUL_SECONDS,
    ).serve()


if __name__ == "__main__":
    main()
