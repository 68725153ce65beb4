"""Production: every secret must come from the environment (or a ``NAME_FILE``)."""

from __future__ import annotations

from storage_service.env import env_bool, env_int, env_secret
from storage_service.settings.base import *

DEBUG = False
SECRET_KEY = env_secret("SERVICE_SECRET_KEY")
SERVICE_API_KEY_HASH_SECRET = env_secret("SERVICE_API_KEY_HASH_SECRET")
AWS_ACCESS_KEY_ID = env_secret("AWS_ACCESS_KEY_ID")
AWS_SECRET_ACCESS_KEY = env_secret("AWS_SECRET_ACCESS_KEY")
SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SERVICE_SECURE_SSL_REDIRECT", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env_int("SERVICE_HSTS_SECONDS", 31536000, minimum=0)
SECURE_CONTENT_TYPE_NOSNIFF = True
configure_storages(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
