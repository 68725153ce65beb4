"""Settings of the reference app: Security and Common middleware only, no installed apps.

The database, Redis, key-hashing secret and DEBUG are the service's own (its dev profile, as
`make run` serves it), so the lean view pays the same connection settings as the API.
"""

from __future__ import annotations

from storage_service.settings import dev

DEBUG = dev.DEBUG
SECRET_KEY = dev.SECRET_KEY
ALLOWED_HOSTS = dev.ALLOWED_HOSTS
DATABASES = dev.DATABASES
REDIS_URL = dev.REDIS_URL
KEY_PREFIX = dev.CACHES["default"].get("KEY_PREFIX", "storage")
SERVICE_API_KEY_HASH_SECRET = dev.SERVICE_API_KEY_HASH_SECRET
INSTALLED_APPS: list[str] = []
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
ROOT_URLCONF = "reference.urls"
APPEND_SLASH = False
USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False
LOGGING_CONFIG = None
