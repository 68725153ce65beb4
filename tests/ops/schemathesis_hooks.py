"""Rules the document states in words but JSON Schema cannot express: positive cases that
break them are not sent (a negative case may still break anything). Each is narrow and
each is tested directly elsewhere.

- ``cursor`` is valid only as the ``nextCursor`` a listing answered (it is signed, and tied
  to that listing's sort): any other value is a 400, by design (tests/files/test_listing.py).
- A part number given twice in a multipart complete is the contract's 400; JSON Schema can
  say "unique items" but not "unique partNumber among items".
- A folder move's ``to`` must not be ``from`` or below it, and a batch names each file id
  once (tests/jobs/).
- ``metadata`` is at most SERVICE_MAX_METADATA_BYTES as compact UTF-8 JSON (the document's
  ``x-maxSerializedBytes``); JSON Schema cannot measure a serialization.
- ``expiresAt`` must be in the future and at most SERVICE_MAX_EXPIRY_DAYS ahead: a moment
  JSON Schema cannot compare with the clock (tests/files/test_expiry.py).

And one failure that is not one: ``DELETE /v1/files/{id}`` is a soft delete that
``POST /v1/files/{id}/restore`` undoes (the contract's trash). schemathesis counts only a POST
to the resource or its collection as re-creating it, so a file read after a successful
restore looks "used after free" to it. Exactly that case is dropped: a use-after-free of a
file whose last successful restore came after its last successful delete.
"""

from __future__ import annotations

import itertools
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis
from schemathesis import GenerationMode
from schemathesis.openapi.checks import UseAfterFree

METADATA_BYTES = 8192  # the default of SERVICE_MAX_METADATA_BYTES, which the test server uses
EXPIRY_DAYS = 3650  # the default of SERVICE_MAX_EXPIRY_DAYS


def _positive(case: Any) -> bool:
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


def _metadata_too_big(body: Any) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        return False
    encoded = json.dumps(body["metadata"], separators=(",", ":"), ensure_ascii=False)
    return len(encoded.encode()) > METADATA_BYTES


def _repeats_a_part(body: Any) -> bool:
    parts = body.get("parts") if isinstance(body, dict) else None
    if not isinstance(parts, list):
        return False
    # Compared as numbers: 121 and 121.0 are the same part (JSON Schema's integers).
    numbers = [part.get("partNumber") for part in parts if isinstance(part, dict)]
    numbers = [n for n in numbers if isinstance(n, int | float) and not isinstance(n, bool)]
    return len(numbers) != len(set(numbers))


def _expiry_out_of_range(body: Any) -> bool:
    """An expiresAt the server refuses for its moment alone (past, or too far ahead), with a
    minute's margin each way for the time the request takes."""
    value = body.get("expiresAt") if isinstance(body, dict) else None
    if not isinstance(value, str):
        return False
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return False  # not a date the schema allows either: the server's 400 is right
    if moment.tzinfo is None:
        return False
    now = datetime.now(UTC)
    margin = timedelta(minutes=1)
    return not now + margin < moment < now + timedelta(days=EXPIRY_DAYS) - margin


def _moves_into_itself(body: Any) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("from"), str):
        return False
    source, target = body["from"], body.get("to")
    return isinstance(target, str) and (target == source or target.startswith(source + "/"))


def _batch_breaks_a_rule(body: Any) -> bool:
    operations = body.get("operations") if isinstance(body, dict) else None
    if not isinstance(operations, list):
        return False
    items = [item for item in operations if isinstance(item, dict)]
    ids = [str(item.get("id")) for item in items]
    return len(ids) != len(set(ids)) or any(
        _metadata_too_big(item) or _expiry_out_of_range(item) for item in items
    )


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    if not _positive(case):
        return True
    if case.query and "cursor" in case.query:
        return False
    return not (
        _metadata_too_big(case.body)
        or _repeats_a_part(case.body)
        or _expiry_out_of_range(case.body)
        or _moves_into_itself(case.body)
        or _batch_breaks_a_rule(case.body)
    )


_order = itertools.count()
_last_delete: dict[str, int] = {}
_last_restore: dict[str, int] = {}


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    if not 200 <= response.status_code < 300:
        return
    file_id = str((case.path_parameters or {}).get("file_id"))
    operation = f"{case.method.upper()} {case.operation.path}"
    if operation == "DELETE /v1/files/{file_id}":
        _last_delete[file_id] = next(_order)
    elif operation == "POST /v1/files/{file_id}/restore":
        _last_restore[file_id] = next(_order)


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    if not isinstance(failure, UseAfterFree):
        return True
    freed = re.fullmatch(r"DELETE /v1/files/(file_[0-9a-z]+)", failure.free)
    if freed is None:
        return True
    file_id = freed.group(1)
    return _last_restore.get(file_id, -1) < _last_delete.get(file_id, -1)
