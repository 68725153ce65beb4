"""Settings shared by every profile. Configuration is environment variables only.

Profiles: ``dev`` (local development, ``make run`` and ``manage.py``), ``test`` (the suite) and
``production``. Only ``dev`` and ``test`` give secrets a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from storage_service.env import env_bool, env_int, env_int_list, env_list, env_str

# Each module's settings (its __all__) are settings of every profile.
from storage_service.settings.database import *
from storage_service.settings.database import database_from_url, with_session_timeouts
from storage_service.settings.storage import *

BASE_DIR = Path(__file__).resolve().parent.parent.parent

GIB = 1024**3
TIB = 1024**4


DEBUG = False
ALLOWED_HOSTS = env_list("SERVICE_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    # Swagger UI's files, served by the service itself (whitenoise): the docs need no CDN.
    "drf_spectacular_sidecar",
    "storage_service",
    "accounts",
    "events",
    "jobs",
    "files",
    "uploads",
    "variants",
    "webhooks",
    "delivery",
]

MIDDLEWARE = [
    "storage_service.middleware.RequestIdMiddleware",
    # Inside the request id (it logs it), outside everything else (it times all of it).
    "storage_service.logs.RequestLogMiddleware",
    # Upload tokens' CORS (answers their preflights itself); API keys never get CORS headers.
    "storage_service.cors.UploadTokenCorsMiddleware",
    # Before anything reads the body or the query: an oversized body is refused unread (413),
    # a query string that is not UTF-8 with 400.
    "storage_service.middleware.RequestLimitsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The admin's assets, served by the app itself in every profile (no separate web server).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The admin's and the console's: Django's own, doing nothing on API paths
    # (storage_service/admin_middleware.py).
    "storage_service.admin_middleware.AdminSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "storage_service.admin_middleware.AdminAuthenticationMiddleware",
    "storage_service.admin_middleware.AdminMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "storage_service.urls"

# What a server process answers: ``api``, every route (delivery URLs among them), or
# ``delivery``, only delivery URLs (/d/…) and the probes, for operators who serve delivery
# apart (`python -m storage_service.serving --role delivery` sets it; docs/operations.md). A
# resolution is a plain Django view that reads no session, cookie, form or user: the
# delivery role runs it behind only the middleware it needs, the very same view as the API's.
SERVICE_ROLE = env_str("SERVICE_ROLE", "api")
if SERVICE_ROLE == "delivery":
    ROOT_URLCONF = "storage_service.delivery_urls"
    MIDDLEWARE = [
        "storage_service.middleware.RequestIdMiddleware",
        "storage_service.logs.RequestLogMiddleware",
        "storage_service.middleware.RequestLimitsMiddleware",
        # HTTPS redirect and HSTS as the profile sets them (production's), as for the API.
        "django.middleware.security.SecurityMiddleware",
    ]
elif SERVICE_ROLE != "api":
    raise ImproperlyConfigured(f"SERVICE_ROLE must be api or delivery, got {SERVICE_ROLE!r}")
# A refused CSRF check answers the one error body too (the API's views are exempt; the admin
# and the probes are not).
CSRF_FAILURE_VIEW = "storage_service.errorviews.csrf_failure"
WSGI_APPLICATION = "storage_service.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The staff console's overrides of the admin's own templates (admin/base_site.html).
        "DIRS": [BASE_DIR / "storage_service" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/storage_service")
DATABASES = {"default": with_session_timeouts(database_from_url(DATABASE_URL))}
if SERVICE_ROLE == "delivery":
    # A resolution's first statement finds a connection PostgreSQL closed (a restart, a
    # failover) itself and is sent again on a new one (delivery/selectors.py), so Django's
    # SELECT 1 before each request's first query would only add a round trip to every one.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "storage",
    }
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on a missing root
STORAGES: dict[str, dict[str, Any]] = {
    # "files", the object store, is added by each profile (object_store() of
    # settings/storage.py, with the profile's credentials). No "default": code that reached for
    # default_storage would fail loudly rather than write to an API host's disk.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Finds assets in the apps directly, so no collectstatic step is needed to run.
WHITENOISE_USE_FINDERS = True
# Benchmarks compare the API with a bare view in the same server; off unless asked for.
SERVICE_BENCH_ROUTES = env_bool("SERVICE_BENCH_ROUTES", False)

# --- Product limits (each documented in the README) ----------------------------------------
SERVICE_DELETE_GRACE_DAYS = env_int("SERVICE_DELETE_GRACE_DAYS", 7, minimum=0)
SERVICE_WEBHOOK_RETRY_DELAYS_MS = env_int_list(
    "SERVICE_WEBHOOK_RETRY_DELAYS_MS", [1000, 5000, 30000, 120000], minimum=0
)
# A delivery attempt succeeds only on a 2xx within this many seconds (the contract's 10).
SERVICE_WEBHOOK_TIMEOUT_SECONDS = env_int("SERVICE_WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# Requests in flight at once per worker process (a thread pool over keep-alive connections).
SERVICE_WEBHOOK_CONCURRENCY = env_int("SERVICE_WEBHOOK_CONCURRENCY", 32, minimum=1, maximum=256)
# The Celery queue of the delivery tasks: its own worker, so image work never delays them.
SERVICE_WEBHOOK_QUEUE = env_str("SERVICE_WEBHOOK_QUEUE", "webhooks")
# The sweep sends deliveries overdue by more than this (their message is taken to be lost).
SERVICE_WEBHOOK_SWEEP_GRACE_SECONDS = env_int("SERVICE_WEBHOOK_SWEEP_GRACE_SECONDS", 5, minimum=0)
SERVICE_UPLOAD_URL_TTL_SECONDS = env_int("SERVICE_UPLOAD_URL_TTL_SECONDS", 900, minimum=60)
SERVICE_MAX_SINGLE_UPLOAD_BYTES = env_int("SERVICE_MAX_SINGLE_UPLOAD_BYTES", 5 * GIB, minimum=1)
SERVICE_MAX_MULTIPART_UPLOAD_BYTES = env_int(
    "SERVICE_MAX_MULTIPART_UPLOAD_BYTES", 5 * TIB, minimum=1
)
SERVICE_MAX_FILENAME_LENGTH = env_int("SERVICE_MAX_FILENAME_LENGTH", 255, minimum=1, maximum=1024)
SERVICE_MAX_PATH_LENGTH = env_int("SERVICE_MAX_PATH_LENGTH", 1024, minimum=1, maximum=4096)
SERVICE_MAX_METADATA_KEYS = env_int("SERVICE_MAX_METADATA_KEYS", 64, minimum=0)
SERVICE_MAX_METADATA_BYTES = env_int("SERVICE_MAX_METADATA_BYTES", 8192, minimum=2)
# --- Input limits ---
# Every limit here is also stated in the OpenAPI document, read from the same setting.
# A request body above this is refused with 413 PAYLOAD_TOO_LARGE before it is read or parsed
# (the largest legitimate body, a part-number list or 8 KiB of metadata, is far below).
SERVICE_MAX_REQUEST_BODY_BYTES = env_int(
    "SERVICE_MAX_REQUEST_BODY_BYTES", 1024 * 1024, minimum=1024, maximum=64 * 1024 * 1024
)
# Django's own check (request.body) agrees with ours, for any path that reads the body itself.
DATA_UPLOAD_MAX_MEMORY_SIZE = SERVICE_MAX_REQUEST_BODY_BYTES
# Arrays and objects nested deeper than this anywhere in a JSON body are a 400: no parser
# recursion, no deep structures in the database.
SERVICE_MAX_JSON_DEPTH = env_int("SERVICE_MAX_JSON_DEPTH", 32, minimum=2, maximum=256)
# metadata's own nesting (the object itself is depth 1).
SERVICE_MAX_METADATA_DEPTH = env_int("SERVICE_MAX_METADATA_DEPTH", 8, minimum=1, maximum=30)
# --- end of input limits ---
SERVICE_IDEMPOTENCY_TTL_HOURS = env_int("SERVICE_IDEMPOTENCY_TTL_HOURS", 24, minimum=1)
# A single upload whose bytes never arrived is marked failed after this long.
SERVICE_PENDING_UPLOAD_EXPIRY_HOURS = env_int("SERVICE_PENDING_UPLOAD_EXPIRY_HOURS", 24, minimum=1)
SERVICE_PURGE_BATCH_SIZE = env_int("SERVICE_PURGE_BATCH_SIZE", 500, minimum=1)
# A multipart session not completed within this long is aborted by the expiry sweep.
SERVICE_MULTIPART_UPLOAD_EXPIRY_HOURS = env_int(
    "SERVICE_MULTIPART_UPLOAD_EXPIRY_HOURS", 24, minimum=1
)

# --- Celery ------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The API sends its messages after commit, inside the request. A Redis that accepts the
# connection but never answers (stopped, overloaded, half a network partition) would otherwise
# hold that request for ever: no socket timeout by default. Bounded here, a send gives up
# within a few seconds; the message is not needed (the sweeps send what was lost). The read
# timeout must stay above the worker's BRPOP poll (1 s). One retry still reconnects a pooled
# connection that a Redis restart closed.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_timeout": 2.0,
    "socket_connect_timeout": 2.0,
}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0}
# The worker logs through LOGGING above (JSON lines with the task's name and id), not its own
# formatter.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = {
    "purge-deleted-files": {
        "task": "files.tasks.purge_deleted_files",
        "schedule": env_int("SERVICE_PURGE_INTERVAL_SECONDS", 3600, minimum=10),
    },
    "expire-pending-uploads": {
        "task": "files.tasks.expire_pending_uploads",
        "schedule": env_int("SERVICE_EXPIRE_PENDING_INTERVAL_SECONDS", 900, minimum=10),
    },
    "expire-multipart-uploads": {
        "task": "uploads.tasks.expire_multipart_uploads",
        "schedule": env_int("SERVICE_EXPIRE_MULTIPART_INTERVAL_SECONDS", 900, minimum=10),
    },
    # Each tenant's stored bytes and files, today: the staff console's 30-day history.
    "snapshot-usage": {
        "task": "accounts.tasks.snapshot_usage",
        "schedule": env_int("SERVICE_USAGE_SNAPSHOT_INTERVAL_SECONDS", 3600, minimum=60),
    },
    # Delivery redirects' bandwidth, counted in Redis, into BandwidthUsage (accounts/bandwidth.py).
    "fold-bandwidth": {
        "task": "accounts.tasks.fold_bandwidth",
        "schedule": env_int("SERVICE_BANDWIDTH_FOLD_INTERVAL_SECONDS", 10, minimum=1),
    },
    "sweep-webhook-deliveries": {
        "task": "webhooks.tasks.sweep_due_deliveries",
        "schedule": env_int("SERVICE_WEBHOOK_SWEEP_INTERVAL_SECONDS", 10, minimum=1),
    },
}
CELERY_TASK_ROUTES = {"webhooks.tasks.*": {"queue": SERVICE_WEBHOOK_QUEUE}}

# --- DRF ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Upload tokens (ut_…) first: it answers only for them and leaves API keys to the next.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "uploads.auth.UploadTokenAuthentication",
        "accounts.auth.ApiKeyAuthentication",
    ],
    # In order: 401 without a key, then 403 INSUFFICIENT_SCOPE, before throttling counts it.
    "DEFAULT_PERMISSION_CLASSES": ["accounts.auth.HasProject", "accounts.scopes.HasScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": (
        "storage_service.negotiation.IgnoreClientContentNegotiation"
    ),
    "DEFAULT_PARSER_CLASSES": ["storage_service.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "storage_service.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # Every list filters through its view's filterset_class (django-filter), then pages
    # through its pagination_class (storage_service.pagination.CursorPagination).
    "DEFAULT_FILTER_BACKENDS": ["storage_service.filtering.FilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.RequestRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "storage_service.openapi.autoschema.AutoSchema",
    "DEFAULT_METADATA_CLASS": "storage_service.options_metadata.OptionsMetadata",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "File storage service",
    "DESCRIPTION": (
        "Store and manage files; the bytes go straight between the client and S3-compatible "
        "storage through presigned URLs. Every request carries `Authorization: Bearer <API "
        "key>`; every response carries `X-Request-Id`; every error answers "
        '`{"error": {"code", "message", "details"?}}`, with the codes each operation lists. '
        "Bodies are JSON objects (`application/json`); text anywhere in a body must be valid "
        "Unicode without NUL; an integer is any number without a fractional part (`12.0` is "
        "12). A resource of another project answers exactly like one that does not exist. "
        "The concepts (upload flow, replace, trash, multipart, variants, webhooks, errors) are "
        "explained in the repository's docs/guide.md."
    ),
    "VERSION": "1",
    # 3.1: full JSON Schema (type lists for null, propertyNames), and a webhooks section for
    # the event envelope our deliveries POST.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Request and response shapes are distinct classes already (serializers in, TypedDicts
    # out): their component names are theirs, with no "Request"/"Patched" variants.
    "COMPONENT_SPLIT_REQUEST": False,
    "COMPONENT_SPLIT_PATCH": False,
    # Enums stay where the shapes declare them (no generated "StatusEnum" components).
    "POSTPROCESSING_HOOKS": [
        "storage_service.openapi.autoschema.add_unversioned_paths",
        "delivery.openapi.add_delivery_path",
    ],
    "WEBHOOKS": ["webhooks.shapes.EVENT_WEBHOOK"],
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# Per API key, per minute, shared by every API process through Redis; 0 turns a budget off.
SERVICE_RATE_LIMIT_READS_PER_MINUTE = env_int(
    "SERVICE_RATE_LIMIT_READS_PER_MINUTE", 6000, minimum=0
)
SERVICE_RATE_LIMIT_WRITES_PER_MINUTE = env_int(
    "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE", 1200, minimum=0
)
# Per upload token (a browser's: starts, parts, completes), per minute; every token request
# also counts into its project's token budget, which is as large as one key's (above).
SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE = env_int(
    "SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE", 600, minimum=0
)
SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE = env_int(
    "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE", 300, minimum=0
)

# One JSON object per line (storage_service/logs.py); SERVICE_LOG_FORMAT=plain for reading by eye.
SERVICE_LOG_FORMAT = env_str("SERVICE_LOG_FORMAT", "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "storage_service.logs.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "filters": {"task": {"()": "storage_service.logs.TaskContextFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain" if SERVICE_LOG_FORMAT == "plain" else "json",
            "filters": ["task"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("SERVICE_LOG_LEVEL", "INFO")},
    "loggers": {
        # botocore logs request URLs and headers (presigned signatures) at DEBUG.
        "botocore": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}


# --- Image variants (variants/) ------------------------------------------------------------
# Images with more pixels than this are refused from their header, before any decoding
# (decompression bombs); outputs are held to the same cap.
# 50 MP, weighted by bytes per sample (a 16-bit image counts each pixel twice): see the
# "Image work" section of docs/security.md for the comparison with imgproxy and Cloudflare.
SERVICE_VARIANT_MAX_PIXELS = env_int("SERVICE_VARIANT_MAX_PIXELS", 50_000_000, minimum=1)
# A variant pending or processing for longer than this is taken to have lost its message or
# its worker, and is run again by the sweep, at most SERVICE_VARIANT_MAX_ATTEMPTS times.
SERVICE_VARIANT_STALE_SECONDS = env_int("SERVICE_VARIANT_STALE_SECONDS", 600, minimum=10)
SERVICE_VARIANT_MAX_ATTEMPTS = env_int("SERVICE_VARIANT_MAX_ATTEMPTS", 3, minimum=1)
CELERY_BEAT_SCHEDULE["requeue-stale-variants"] = {
    "task": "variants.tasks.requeue_stale_variants",
    "schedule": env_int("SERVICE_VARIANT_SWEEP_INTERVAL_SECONDS", 300, minimum=10),
}

# --- Image work limits -------------------------------------------------------------------
# Each is documented, with its reason, in the "Image work" section of docs/security.md.
# Originals larger than this are never downloaded: the download is a ranged GET of at most
# this many bytes (and one), refused on its answer's size before its body is read.
SERVICE_VARIANT_MAX_SOURCE_BYTES = env_int(
    "SERVICE_VARIANT_MAX_SOURCE_BYTES", 100 * 1024 * 1024, minimum=1
)
# A variant is never scaled up more than this factor from its source (1: never enlarged); a
# larger request is clamped, keeping the requested box's shape.
SERVICE_VARIANT_MAX_UPSCALE = env_int("SERVICE_VARIANT_MAX_UPSCALE", 1, minimum=1, maximum=16)
# Distinct variants (thumbnail included) one file version may have; more answers 409.
SERVICE_VARIANT_MAX_PER_VERSION = env_int("SERVICE_VARIANT_MAX_PER_VERSION", 50, minimum=1)
# Transforms of one project running at once, over all workers (slots counted in Redis); the
# project's further transforms wait (retried with a growing countdown up to
# SERVICE_VARIANT_DEFER_MAX_SECONDS) instead of taking every worker.
SERVICE_VARIANT_PROJECT_CONCURRENCY = env_int("SERVICE_VARIANT_PROJECT_CONCURRENCY", 2, minimum=1)
SERVICE_VARIANT_DEFER_MAX_SECONDS = env_int("SERVICE_VARIANT_DEFER_MAX_SECONDS", 30, minimum=1)
# A transform gets SoftTimeLimitExceeded (and fails with a reason) after the soft limit, and
# its process is killed at the hard limit (the variant fails too). Both must stay below the
# stale threshold, so the sweep never sends again a transform that is still running. 0 turns
# the soft limit off.
SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS = env_int(
    "SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS", 120, minimum=0
)
SERVICE_VARIANT_TIME_LIMIT_SECONDS = env_int("SERVICE_VARIANT_TIME_LIMIT_SECONDS", 180, minimum=1)
if SERVICE_VARIANT_TIME_LIMIT_SECONDS >= SERVICE_VARIANT_STALE_SECONDS:
    raise ImproperlyConfigured(
        "SERVICE_VARIANT_TIME_LIMIT_SECONDS must be below SERVICE_VARIANT_STALE_SECONDS, or the "
        "stale sweep sends again transforms that are still running"
    )
if SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS >= SERVICE_VARIANT_TIME_LIMIT_SECONDS:
    raise ImproperlyConfigured(
        "SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS must be below SERVICE_VARIANT_TIME_LIMIT_SECONDS"
    )
# A worker process whose resident memory is above this (KiB) after a task is replaced by a
# fresh one: a large decode's memory goes back to the system instead of staying with it.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int(
    "SERVICE_WORKER_MAX_MEMORY_PER_CHILD_KIB", 400 * 1024, minimum=1
)
# The nice value of each Celery pool process (image work; not the webhook worker's threads),
# and of the worker's session's autogroup (storage_service/cpupriority.py): the API's requests
# take the CPU first. 0 leaves the priority as it is.
SERVICE_WORKER_NICE = env_int("SERVICE_WORKER_NICE", 10, minimum=0, maximum=19)
# Transforms have their own queue: the sweeps (Celery's default queue) and the webhook
# deliveries never wait behind a backlog of image work.
SERVICE_TRANSFORM_QUEUE = env_str("SERVICE_TRANSFORM_QUEUE", "transforms")
CELERY_TASK_ROUTES["variants.tasks.process_variant"] = {"queue": SERVICE_TRANSFORM_QUEUE}


# --- Locks and timeouts ---------------------------------------------------------------------
# Every API request must end, with an answer, inside API_TIMEOUT_SECONDS: a request still running
# then ends its worker process (storage_service/serving.py, RequestTimeout), and its client gets
# a dropped connection (a 502 behind a proxy) instead of the documented 503.
API_TIMEOUT_SECONDS = env_int("API_TIMEOUT_SECONDS", 30, minimum=5)
STORE_CALL_BUDGET_SECONDS = SERVICE_STORE_MAX_ATTEMPTS * (
    SERVICE_STORE_CONNECT_TIMEOUT_SECONDS + SERVICE_STORE_READ_TIMEOUT_SECONDS
)
if STORE_CALL_BUDGET_SECONDS >= API_TIMEOUT_SECONDS:
    raise ImproperlyConfigured(
        f"One object-store call may take {STORE_CALL_BUDGET_SECONDS} s (attempts x (connect +"
        f" read)), not under API_TIMEOUT_SECONDS={API_TIMEOUT_SECONDS}: a store outage would"
        " kill workers instead of answering 503."
    )


# --- Webhook fairness, safe defaults and retention -------------------------------------------
# Webhooks may not reach private networks (SSRF) unless a profile or the operator allows it;
# only the dev profile turns it on by default (storage_service/settings/dev.py).
SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = env_bool("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
# A webhook host's DNS lookup is abandoned after this (registration and delivery alike).
SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS = env_int(
    "SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS", 3, minimum=1, maximum=30
)
# Attempts in flight at once per project and per destination host, in each webhook worker
# process: a project whose receiver hangs holds at most this many sending threads; its other
# deliveries wait (not counted as attempts) and everyone else's go on.
# 16 of the 32 sending threads: bench/webhooks.py (one project, 20 endpoints on one host)
# lost ~25% of its deliveries per second at 16 and ~60% at 8 on the loaded 2-core machine.
SERVICE_WEBHOOK_PROJECT_CONCURRENCY = env_int(
    "SERVICE_WEBHOOK_PROJECT_CONCURRENCY", 16, minimum=1, maximum=256
)
SERVICE_WEBHOOK_HOST_CONCURRENCY = env_int(
    "SERVICE_WEBHOOK_HOST_CONCURRENCY", 16, minimum=1, maximum=256
)
# How long a delivery held back by those caps waits before it is looked at again.
SERVICE_WEBHOOK_DEFER_MS = env_int("SERVICE_WEBHOOK_DEFER_MS", 1000, minimum=10)
# A replay makes its deliveries this many at a time, the next batch once fewer than half a
# batch of the endpoint's deliveries wait for a first attempt, looked at every POLL_MS.
SERVICE_WEBHOOK_REPLAY_BATCH = env_int(
    "SERVICE_WEBHOOK_REPLAY_BATCH", 100, minimum=2, maximum=10000
)
SERVICE_WEBHOOK_REPLAY_POLL_MS = env_int("SERVICE_WEBHOOK_REPLAY_POLL_MS", 200, minimum=10)
# An endpoint whose every attempt has failed for this long is disabled (Stripe and Svix: 5
# days); a 410 Gone disables it at once.
SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS = env_int(
    "SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS", 5 * 24 * 3600, minimum=1
)
# Events and their deliveries are deleted this many days after they were created.
SERVICE_EVENT_RETENTION_DAYS = env_int("SERVICE_EVENT_RETENTION_DAYS", 30, minimum=1)
# The retention sweep deletes this many rows per statement, at most this many statements per run.
SERVICE_RETENTION_BATCH_SIZE = env_int("SERVICE_RETENTION_BATCH_SIZE", 5000, minimum=1)
SERVICE_RETENTION_MAX_BATCHES = env_int("SERVICE_RETENTION_MAX_BATCHES", 200, minimum=1)
CELERY_BEAT_SCHEDULE["sweep-old-events"] = {
    "task": "events.tasks.sweep_old_events",
    "schedule": env_int("SERVICE_RETENTION_INTERVAL_SECONDS", 3600, minimum=10),
}
# Expired admin sessions (django_session rows) are deleted daily.
CELERY_BEAT_SCHEDULE["clear-expired-sessions"] = {
    "task": "storage_service.tasks.clear_expired_sessions",
    "schedule": env_int("SERVICE_CLEAR_SESSIONS_INTERVAL_SECONDS", 86400, minimum=60),
}
# --- Expiry and limits -----------------------------------------------------------------------
# expiresAt may be at most this many days ahead.
SERVICE_MAX_EXPIRY_DAYS = env_int("SERVICE_MAX_EXPIRY_DAYS", 3650, minimum=1)
# The expiry sweep deletes expired files in transactions of this many, at most this many per
# run: a million files expiring at once are deleted over successive runs, none of them long.
SERVICE_EXPIRY_BATCH_SIZE = env_int("SERVICE_EXPIRY_BATCH_SIZE", 200, minimum=1)
SERVICE_EXPIRY_MAX_PER_RUN = env_int("SERVICE_EXPIRY_MAX_PER_RUN", 20000, minimum=1)
# Often enough that a file is deleted within a minute after it expires.
CELERY_BEAT_SCHEDULE["expire-files"] = {
    "task": "files.tasks.expire_files",
    "schedule": env_int("SERVICE_EXPIRY_INTERVAL_SECONDS", 30, minimum=1),
}
# Usage (files/usage.py): every statement on stored objects adds a delta row to its tenant;
# this sweep folds each tenant's rows into one, for at most this many tenants per run (those
# with the most rows first), so the quota's sum reads the rows of one interval's writes.
SERVICE_USAGE_FOLD_MAX_TENANTS = env_int("SERVICE_USAGE_FOLD_MAX_TENANTS", 1000, minimum=1)
CELERY_BEAT_SCHEDULE["fold-usage"] = {
    "task": "files.tasks.fold_usage",
    "schedule": env_int("SERVICE_USAGE_FOLD_INTERVAL_SECONDS", 30, minimum=1),
}

# Jobs (folder move, delete, restore): files changed per batch (one transaction each, with
# their events), how long a run holds a job before another may take it over (renewed with
# every batch; a killed worker's job is taken over once it runs out), how long one task
# runs before it hands the job back to the queue (so long jobs take turns with other work),
# how many jobs a tenant (project and mode) may have pending or running at once (more:
# 429 RATE_LIMITED with Retry-After), and how many runs in a row may fail (a batch raised, a
# worker was lost) with no batch committed before the job ends failed.
SERVICE_JOB_BATCH_SIZE = env_int("SERVICE_JOB_BATCH_SIZE", 1000, minimum=1, maximum=10_000)
SERVICE_JOB_LEASE_SECONDS = env_int("SERVICE_JOB_LEASE_SECONDS", 60, minimum=5)
SERVICE_JOB_SLICE_SECONDS = env_int("SERVICE_JOB_SLICE_SECONDS", 10, minimum=1)
SERVICE_JOB_MAX_ACTIVE_PER_PROJECT = env_int("SERVICE_JOB_MAX_ACTIVE_PER_PROJECT", 3, minimum=1)
SERVICE_JOB_MAX_ATTEMPTS = env_int("SERVICE_JOB_MAX_ATTEMPTS", 5, minimum=1)
if SERVICE_JOB_SLICE_SECONDS >= SERVICE_JOB_LEASE_SECONDS:
    raise ImproperlyConfigured("SERVICE_JOB_SLICE_SECONDS must be below SERVICE_JOB_LEASE_SECONDS")
CELERY_BEAT_SCHEDULE["sweep-jobs"] = {
    "task": "jobs.tasks.sweep_jobs",
    "schedule": env_int("SERVICE_JOB_SWEEP_INTERVAL_SECONDS", 30, minimum=1),
}


# --- Delivery to the web (delivery/) -------------------------------------------------------
# Where delivery URLs live (``{base}/d/…``); empty: on the API's own host.
SERVICE_DELIVERY_BASE_URL = env_str("SERVICE_DELIVERY_BASE_URL", "")
# A delivery URL answers the very same Location for this long (its presigned URL lives two
# windows), so caches of the store's answers hit.
SERVICE_DELIVERY_WINDOW_SECONDS = env_int(
    "SERVICE_DELIVERY_WINDOW_SECONDS", 3600, minimum=60, maximum=302_400
)
# The longest a redirect of an unpinned URL may be cached: a replace shows within it.
SERVICE_DELIVERY_CURRENT_MAX_AGE = env_int("SERVICE_DELIVERY_CURRENT_MAX_AGE", 60, minimum=0)
# An on-demand variant is waited for this long in all, one hold at a time (a request thread
# is held at most one hold; then the client is sent back to the same URL).
SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS = env_int(
    "SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS", 10, minimum=0
)
SERVICE_DELIVERY_TRANSFORM_HOLD_MS = env_int(
    "SERVICE_DELIVERY_TRANSFORM_HOLD_MS", 1000, minimum=0, maximum=10_000
)
# First requests of one project waiting for their on-demand variants at once, over every API
# process (Redis); beyond it a first request answers 503 VARIANT_NOT_READY at once, its variant
# still made. Twice the project's transforms that may run at once: more waiters would mostly
# wait behind the project's own queue, holding request threads for nothing.
SERVICE_DELIVERY_PROJECT_WAITING = env_int(
    "SERVICE_DELIVERY_PROJECT_WAITING", 2 * SERVICE_VARIANT_PROJECT_CONCURRENCY, minimum=1
)
# How long a process keeps what resolving read of a settled target (an uploaded file, a ready
# variant), so a URL resolved again costs no SQL statement; it forgets a project's rows as soon
# as a change of the project commits (delivery/remembered.py). The lifetime only bounds a
# change whose announcement was lost. 0 reads the rows on every resolution.
DELIVERY_REMEMBER_SECONDS_DEFAULT = 10
SERVICE_DELIVERY_REMEMBER_SECONDS = env_int(
    "SERVICE_DELIVERY_REMEMBER_SECONDS", DELIVERY_REMEMBER_SECONDS_DEFAULT, minimum=0
)
# Resolutions per project per minute, over every API process (Redis); 0 turns it off.
SERVICE_DELIVERY_RATE_PER_MINUTE = env_int("SERVICE_DELIVERY_RATE_PER_MINUTE", 60_000, minimum=0)
# A process sends its redirects' bytes to Redis once it holds this many, and at least this
# often: a process that crashes loses at most that batch (accounts/bandwidth.py).
SERVICE_BANDWIDTH_BATCH_REDIRECTS = env_int("SERVICE_BANDWIDTH_BATCH_REDIRECTS", 100, minimum=1)
SERVICE_BANDWIDTH_FLUSH_SECONDS = env_int("SERVICE_BANDWIDTH_FLUSH_SECONDS", 1, minimum=1)
