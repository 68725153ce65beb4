"""What a test needs to run part of the service in another process (a worker, the API server)."""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings


def database_url(*, host: str | None = None, port: int | None = None) -> str:
    """The test database's URL for a child process, optionally through another TCP host and
    port (a proxy the test can cut). A unix-socket host (the embedded PostgreSQL) is kept as
    ``?host=`` unless a TCP host is given."""
    db = settings.DATABASES["default"]
    user = quote(str(db["USER"] or ""))
    password = f":{quote(str(db['PASSWORD']))}" if db["PASSWORD"] else ""
    auth = f"{user}{password}@" if user else ""
    configured = str(db["HOST"] or "")
    if host is None and configured.startswith("/"):
        return f"postgres://{auth}/{db['NAME']}?host={quote(configured)}"
    host = host or configured or "127.0.0.1"
    port_part = f":{port or db['PORT']}" if (port or db["PORT"]) else ""
    return f"postgres://{auth}{host}{port_part}/{db['NAME']}"
