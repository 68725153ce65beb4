"""The two reference views.

``lean_file`` is what an authenticated single-file GET costs done the shortest way in Django:
the HMAC of the key, ONE SQL statement joining the key to the file (scoped to the key's
project, deleted files left out, as the API does), ONE Redis pipeline for the rate-limit count
(INCR + EXPIRE in MULTI/EXEC, as accounts/throttling.py does) and ``json.dumps`` of the same
fields the API answers. No request log, no request id, no DRF.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import datetime
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

LEAN_SQL = (
    "SELECT f.id, f.filename, f.path, f.content_type, f.size, f.status, f.version,"
    " f.metadata, f.created_at, f.updated_at, f.uploaded_at, f.checksum, f.deleted_at,"
    " k.id"
    " FROM accounts_apikey k JOIN files_file f"
    " ON f.project_id = k.project_id AND f.mode = k.environment"
    " WHERE k.key_hash = %s AND k.revoked_at IS NULL AND f.id = %s AND f.status <> 'deleted'"
)


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.25)


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def bare(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"data": {"ok": True}})


def lean_file(request: HttpRequest, file_id: str) -> HttpResponse:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    token = header[7:] if header.startswith("Bearer ") else ""
    digest = hmac.new(
        settings.SERVICE_API_KEY_HASH_SECRET.encode(), token.encode(), hashlib.sha256
    ).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute(LEAN_SQL, [digest, file_id])
        row = cursor.fetchone()
    if row is None:
        return HttpResponse(b'{"error":{"code":"FILE_NOT_FOUND"}}', status=404)
    window = int(time.time() // 60)
    key = f"{settings.KEY_PREFIX}:rl:{row[13]}:r:{window}"
    pipe = _redis().pipeline(transaction=True)
    pipe.incr(key)
    pipe.expire(key, 65)
    pipe.execute()
    data: dict[str, Any] = {
        "id": row[0],
        "filename": row[1],
        "path": row[2],
        "contentType": row[3],
        "size": row[4],
        "status": row[5],
        "version": row[6],
        # Django's backend hands jsonb over as text (JSONField parses it): so does this.
        "metadata": json.loads(row[7]) if isinstance(row[7], str) else row[7],
        "createdAt": _ts(row[8]),
        "updatedAt": _ts(row[9]),
    }
    if row[10] is not None:
        data["uploadedAt"] = _ts(row[10])
    if row[11]:
        data["checksum"] = row[11]
    body = json.dumps({"data": data}, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(body.encode(), content_type="application/json")


urlpatterns = [
    path("bare", bare),
    path("lean/files/<str:file_id>", lean_file),
]
