"""The test suite: real PostgreSQL, Redis and SeaweedFS, as ``make test`` resolves them."""

from __future__ import annotations

import os

from storage_service.env import load_env_file
from storage_service.settings.paths import SERVICES_ENV_FILE

load_env_file(SERVICES_ENV_FILE)
# `pytest -n 2` runs the suite in workers gw0, gw1 at once: each has its own bucket, queues and
# cache prefix (and, from pytest-django, its own database), so the servers and Celery workers
# one starts never see the other's rows or messages. The processes a worker starts inherit
# PYTEST_XDIST_WORKER, so they agree with it.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
TEST_RUN_SUFFIX = f"-{_XDIST_WORKER}" if _XDIST_WORKER else ""
# The suite writes to its own bucket so it never touches what `make run` stored.
os.environ["AWS_STORAGE_BUCKET_NAME"] = (
    os.environ.get("TEST_AWS_STORAGE_BUCKET_NAME", "storage-test") + TEST_RUN_SUFFIX
)

from storage_service.settings.base import *
from storage_service.settings.storage import object_store
from storage_service.env import env_bool, env_int, env_int_list, env_secret, env_str

DEBUG = False
SECRET_KEY = "test-secret-key"
SERVICE_API_KEY_HASH_SECRET = "test-api-key-hash-secret"
STORAGES = {
    **STORAGES,
    "files": object_store(
        access_key=env_secret("AWS_ACCESS_KEY_ID", "storage-dev"),
        secret_key=env_secret("AWS_SECRET_ACCESS_KEY", "storage-dev-secret-0123456789"),
    ),
}
# Off, as in production: the webhook tests that use a local receiver turn it on themselves.
SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
ALLOWED_HOSTS = ["*"]
# Keep test cache keys apart from a running `make run`.
CACHES["default"]["KEY_PREFIX"] = f"storage-test{TEST_RUN_SUFFIX}"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Test tasks go to their own queue, so a `make run` worker on the same Redis never takes them
# (it would run them against the development database).
# A test may point a server of its own at queues no worker reads (the fuzzing server: its
# random webhook URLs must never be called).
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", f"storage-test{TEST_RUN_SUFFIX}")
SERVICE_WEBHOOK_QUEUE = env_str("SERVICE_WEBHOOK_QUEUE", f"storage-test-webhooks{TEST_RUN_SUFFIX}")
SERVICE_TRANSFORM_QUEUE = env_str(
    "SERVICE_TRANSFORM_QUEUE", f"storage-test-transforms{TEST_RUN_SUFFIX}"
)
CELERY_TASK_ROUTES = {
    "webhooks.tasks.*": {"queue": SERVICE_WEBHOOK_QUEUE},
    "variants.tasks.process_variant": {"queue": SERVICE_TRANSFORM_QUEUE},
}
# The suite's own process resolves delivery URLs inside test transactions that never commit,
# so the announcements that make kept resolution rows forgotten (events/changes.py) never go
# out there: it reads the rows on every resolution. The servers the suite starts keep them, as
# deployed (tests/servers.py).
SERVICE_DELIVERY_REMEMBER_SECONDS = env_int("SERVICE_DELIVERY_REMEMBER_SECONDS", 0, minimum=0)
# Short retry delays, so the suite can watch a delivery go through all its attempts.
SERVICE_WEBHOOK_RETRY_DELAYS_MS = env_int_list("SERVICE_WEBHOOK_RETRY_DELAYS_MS", [300, 600, 900])
