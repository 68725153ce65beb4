"""The settings profile a process runs with must be chosen, never assumed.

``wsgi.py``, ``celery.py`` and ``manage.py`` used to fall back to the dev profile: DEBUG on,
hard-coded secrets, webhooks allowed into private networks. A production process started
without ``DJANGO_SETTINGS_MODULE`` then ran that way without a word. Now it refuses to start
and says what to set. ``make run`` (scripts/devservices.py), ``make test`` (pytest's
settings in pyproject.toml), the benchmarks and the test fixtures all set it explicitly.
"""

from __future__ import annotations

import os

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


class ProfileNotChosen(SystemExit):
    """Ends the process with the message on stderr and exit status 1 (SystemExit's own)."""

    def __init__(self) -> None:
        super().__init__(MESSAGE)


def require_profile() -> str:
    """The chosen settings module; exits the process when none was chosen."""
    chosen = os.environ.get("DJANGO_SETTINGS_MODULE", "")
    if not chosen.strip():
        raise ProfileNotChosen()
    return chosen
