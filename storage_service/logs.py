"""Structured logs: one JSON object per line, from the API, the workers and beat alike.

Every record carries its time, level, logger and message, plus whatever context it was logged
with (``extra=``) and, inside a Celery task, the task's name and id. Request lines come from
``RequestLogMiddleware``: one per request, written after the response, so they hold the status
and the time it took.

What never reaches a log: API keys (only their 16-character display prefix), webhook secrets,
presigned URLs (their signatures are credentials). Nothing here logs a URL's query string, and
botocore's own debug output, which would, is kept at WARNING in the settings.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from celery.signals import task_postrun, task_prerun
from django.http import HttpRequest, HttpResponse

# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is context.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)

request_logger = logging.getLogger("storage_service.requests")
# One encoder for every line (json.dumps with options builds a new one per call); a value JSON
# has no form for (a datetime, an id object) is logged as its str().
_LINE_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        context = {
            key: value
            for key, value in vars(record).items()
            if key not in _STANDARD_ATTRS and not key.startswith("_")
        }
        if record.exc_info:
            context["exception"] = self.formatException(record.exc_info)
        created = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, Any] = {
            "time": created.isoformat(timespec="milliseconds")[:-6] + "Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **context,
        }
        return _LINE_ENCODER.encode(line)


# The tasks running in this context, innermost last: (name, id, args) of each. Set by Celery's
# task_prerun and task_postrun signals, so a record logged outside any task (every API request
# line) is told so by one context-variable read, not by asking Celery for its current task.
_running_tasks: ContextVar[tuple[tuple[str, str, list[Any]], ...]] = ContextVar(
    "running_tasks", default=()
)


@task_prerun.connect
def _task_started(*, task_id: str, task: Any, args: Any = None, **_: Any) -> None:
    # Every task's arguments are row ids (variant, delivery, ...), never secrets, so a
    # task's log lines say what it was working on.
    _running_tasks.set((*_running_tasks.get(), (task.name, task_id, list(args or []))))


@task_postrun.connect
def _task_ended(**_: Any) -> None:
    _running_tasks.set(_running_tasks.get()[:-1])


class TaskContextFilter(logging.Filter):
    """Adds ``task``, ``taskId`` and ``taskArgs`` to every record logged while a task runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        running = _running_tasks.get()
        if running and not hasattr(record, "taskId"):
            record.task, record.taskId, record.taskArgs = running[-1]
        return True


class RequestLogMiddleware:
    """One line per request: id, method, route pattern, status, duration, project and key."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        duration_ms = round((time.perf_counter() - started) * 1000, 2)
        match = request.resolver_match
        # The route pattern, not the path: it names the endpoint without the ids in it, and
        # never carries a query string.
        route = match.route if match is not None else None
        api_key = getattr(request, "auth", None)
        context = {
            "requestId": getattr(request, "request_id", None),
            "method": request.method,
            "route": route,
            "status": response.status_code,
            "durationMs": duration_ms,
            "projectId": getattr(api_key, "project_id", None),
            "keyPrefix": getattr(api_key, "prefix", None),
        }
        request_logger.info(
            "%s %s %s", request.method, route or "-", response.status_code, extra=context
        )
        return response
