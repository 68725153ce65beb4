"""Local development: ``make run`` and ``manage.py`` in a checkout.

The only profile (with ``test``) where secrets have defaults: they protect nothing but a
developer's own machine.
"""

from __future__ import annotations

from storage_service.env import env_bool, env_secret, load_env_file
from storage_service.settings.paths import SERVICES_ENV_FILE

load_env_file(SERVICES_ENV_FILE)

from storage_service.settings.base import *
from storage_service.settings.storage import object_store

DEBUG = env_bool("SERVICE_DEBUG", True)
SECRET_KEY = env_secret("SERVICE_SECRET_KEY", "dev-only-secret-key-not-for-production")
SERVICE_API_KEY_HASH_SECRET = env_secret(
    "SERVICE_API_KEY_HASH_SECRET", "dev-only-api-key-hash-secret"
)
STORAGES = {
    **STORAGES,
    "files": object_store(
        access_key=env_secret("AWS_ACCESS_KEY_ID", "storage-dev"),
        secret_key=env_secret("AWS_SECRET_ACCESS_KEY", "storage-dev-secret-0123456789"),
    ),
}
SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", True)
