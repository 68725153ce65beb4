"""Production: every secret and the public host names must come from the environment.

Select it with ``DJANGO_SETTINGS_MODULE=storage_service.settings.production``. A secret may be
given as ``NAME`` or as ``NAME_FILE`` (a path, for Docker/Kubernetes secrets). The service is
meant to sit behind a TLS-terminating load balancer that sets ``X-Forwarded-Proto``.
`manage.py check --deploy` passes with this profile (tests/ops/test_production.py).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from storage_service.env import env_bool, env_int, env_list, env_secret, env_secret_file
from storage_service.settings.base import *
from storage_service.settings.storage import object_store

DEBUG = False
SECRET_KEY = env_secret("SERVICE_SECRET_KEY")
SERVICE_API_KEY_HASH_SECRET = env_secret("SERVICE_API_KEY_HASH_SECRET")
STORAGES = {
    **STORAGES,
    # Static keys only when given as files (Docker/K8s secrets); otherwise botocore's default
    # chain reads the AWS_* variables itself, or the role the process runs as.
    "files": object_store(
        access_key=env_secret_file("AWS_ACCESS_KEY_ID"),
        secret_key=env_secret_file("AWS_SECRET_ACCESS_KEY"),
        session_token=env_secret_file("AWS_SESSION_TOKEN"),
    ),
}
# Webhooks may not reach the service's own network (SSRF) unless an operator opts in.
SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)

# No default: answering for "localhost" in production would hide a misconfiguration.
ALLOWED_HOSTS = env_list("SERVICE_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("Set SERVICE_ALLOWED_HOSTS to the host names the API answers on.")
# The admin's login form posts across the load balancer's origin.
CSRF_TRUSTED_ORIGINS = env_list(
    "SERVICE_CSRF_TRUSTED_ORIGINS", [f"https://{h}" for h in ALLOWED_HOSTS]
)

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SERVICE_SECURE_SSL_REDIRECT", True)
# Probes come from the load balancer over plain HTTP on the private side.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env_int("SERVICE_HSTS_SECONDS", 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SERVICE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SERVICE_HSTS_PRELOAD", False)
# Preloading is a one-way commitment for the whole domain: the operator's call, not a default.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
