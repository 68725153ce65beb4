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

limit_request_line = 0

# Sync workers, one thread each: a request holds a worker for its whole life, and the work is
# a few SQL queries and a presign (the bytes never pass through the API), so processes, not
# threads, use the cores. WEB_CONCURRENCY (gunicorn's own variable) overrides the count.
workers = int(os.environ.get("WEB_CONCURRENCY") or max(2, 2 * len(os.sched_getaffinity(0))))
threads = 1
worker_class = "sync"

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
