"""gunicorn's settings for every way the API is served (`make run`, the suite's servers,
production from the checkout): gunicorn reads ./gunicorn.conf.py by default.

A list query may carry a 1,024-character folder path, a 255-character search and contentType
and a 2,000-character cursor, each up to 12 bytes a character once URL-encoded: about 24 KiB,
past gunicorn's default request-line limit of 4,094 bytes, where it would answer an HTML 414
to a request the API documents as valid. 0 lifts gunicorn's own limit to its 1 MiB ceiling.
"""

import os

limit_request_line = 0

# The worker timeout: a request still running after it is killed. Django settings read the
# same variable and refuse an object-store budget that does not fit inside it.
timeout = int(os.environ.get("API_TIMEOUT_SECONDS", "30"))
