"""gunicorn's settings for every way the API is served: `make run`, `make cluster`, the
benchmarks (bench/_common.py), the suite's servers (tests/servers.py), the Procfile and the
systemd units. Each starts ``gunicorn -c deploy/gunicorn.conf.py storage_service.wsgi:application
--bind HOST:PORT``, so the command line is written once, here; only the address differs.

A list query may carry a 1,024-character folder path, a 255-character search and contentType
and a 2,000-character cursor, each up to 12 bytes a character once URL-encoded: about 24 KiB,
past gunicorn's default request-line limit of 4,094 bytes, where it would answer an HTML 414
to a request the API documents as valid. 0 lifts gunicorn's own limit to its 1 MiB ceiling.
"""

import os
from typing import Any

limit_request_line = 0

# Threaded workers (gthread): a connection stays open between requests (HTTP keep-alive), as
# clients and proxies expect, instead of a TCP connection per request as sync workers do.
# Each request still holds one thread for its whole life (a few SQL statements and a presign;
# the bytes never pass through the API); processes, not threads, use the cores, so THREADS
# only covers the time a request waits on PostgreSQL or Redis. WEB_CONCURRENCY and
# WEB_THREADS override the counts.
workers = int(os.environ.get("WEB_CONCURRENCY") or max(2, 2 * len(os.sched_getaffinity(0))))
threads = int(os.environ.get("WEB_THREADS") or 2)
worker_class = "gthread"
# Idle keep-alive connections are closed after this many seconds (gunicorn's default, 2, is
# shorter than most clients' pools keep them).
keepalive = 5

# The API refuses a body over SERVICE_MAX_REQUEST_BODY_BYTES unread (413, before reading a
# byte: storage_service/middleware.py). The connection of such a request is closed after the
# answer ("Connection: close"): otherwise gunicorn would read the unsent body to find the next
# request. gunicorn ignores a Connection header the application sets, hence this hook.
_max_body = int(os.environ.get("SERVICE_MAX_REQUEST_BODY_BYTES") or 1024 * 1024)


def pre_request(worker: Any, req: Any) -> None:
    for name, value in req.headers:
        if name == "CONTENT-LENGTH" and value.isdigit() and int(value) > _max_body:
            req.must_close = True


# The worker timeout: a request still running after it is killed. Django settings read the
# same variable and refuse an object-store budget that does not fit inside it.
timeout = int(os.environ.get("API_TIMEOUT_SECONDS", "30"))

# Below the 10 s after which `make run`/`make cluster` (and systemd's TimeoutStopSec in
# deploy/systemd/) SIGKILL, so in-flight requests can finish on Ctrl-C or a stop.
graceful_timeout = 8

# No access log: the service writes its own JSON line per request (storage_service/logs.py),
# with the request id, project and key prefix. gunicorn's default is already none.
accesslog = None

# gunicorn's control socket defaults to one path per user (~/.gunicorn/gunicorn.ctl), which two
# checkouts, or the two API processes of `make cluster`, would fight over.
control_socket_disable = True
