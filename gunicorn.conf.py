"""gunicorn's settings for every way the API is served (`make run`, the suite's servers,
production from the checkout): gunicorn reads ./gunicorn.conf.py by default.

A list query may carry a 1,024-character folder path, a 255-character search and contentType
and a 2,000-character cursor, each up to 12 bytes a character once URL-encoded: about 24 KiB,
past gunicorn's default request-line limit of 4,094 bytes, where it would answer an HTML 414
to a request the API documents as valid. 0 lifts gunicorn's own limit to its 1 MiB ceiling.
"""

import os

limit_request_line = 0

# --- Workers (issue 14) ---------------------------------------------------------------------
# Here rather than on devservices' command line, so `make run`, the suite's servers and the
# benchmark's reference servers all run the same worker settings. WEB_CONCURRENCY overrides
# the count (gunicorn's own convention).
workers = int(os.environ.get("WEB_CONCURRENCY") or max(2, 2 * len(os.sched_getaffinity(0))))
worker_class = "sync"
threads = 1
