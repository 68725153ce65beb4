"""The settings profile a process runs with must be chosen, never assumed.

``wsgi.py``, ``celery.py`` and ``manage.py`` refuse to start without
``DJANGO_SETTINGS_MODULE`` and say what to set. A fallback to the dev profile would run a
production process bare with DEBUG on, hard-coded secrets and webhooks allowed into private
networks, without a word. ``make run`` (scripts/devservices.py), ``make test`` (pytest's
settings in pyproject.toml), the benchmarks and the test fixtures all set it explicitly.
"""

from __future__ import annotations

import os
import sys

PROFILES = (
    "storage_service.settings.production",
    "storage_service.settings.dev",
    "storage_service.settings.test",
)
MESSAGE = (
    "DJANGO_SETTINGS_MODULE is not set. Choose the settings profile explicitly: "
    "storage_service.settings.production for a deployment, storage_service.settings.dev "
    "for a local checkout (make run sets it), storage_service.settings.test for the suite."
)


# Its own exit status, so a caller can tell this refusal from a crash; the API server's launcher
# refuses before any worker starts, so no worker is restarted for ever.
EXIT_STATUS = 3


class ProfileNotChosen(SystemExit):
    """Ends the process with exit status 3, after the message on stderr."""

    def __init__(self) -> None:
        print(MESSAGE, file=sys.stderr, flush=True)
        super().__init__(EXIT_STATUS)


def require_profile() -> str:
    """The chosen settings module; exits the process when none was chosen."""
    chosen = os.environ.get("DJANGO_SETTINGS_MODULE", "")
    if not chosen.strip():
        raise ProfileNotChosen()
    return chosen
