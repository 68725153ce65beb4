"""Batches: up to 100 file operations in one request, each run as its single endpoint runs.

The whole batch is one transaction and each operation a savepoint inside it: an operation
that is refused (an ApiError, as its endpoint would answer) rolls back only itself, and the
others go on. Any other failure (the database lost) rolls the whole batch back, so a batch
is never half done by accident, and a retry with the same ``Idempotency-Key`` runs it anew.
With a key, the answer is remembered in the same transaction and replayed on retry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.tenancy import Tenant
from files.models import File
from files.services.idempotency import BATCH, idempotency_claim, idempotency_remember
from storage_service.errors import ApiError


@dataclass(frozen=True)
class Operation:
    """One operation, ready to run: ``run`` calls its service (validated arguments bound),
    or ``refusal`` is what its endpoint answers before any service runs (a bad field)."""

    op: str
    id: str
    run: Callable[[], File] | None
    refusal: Exception | None = None


@dataclass(frozen=True)
class Outcome:
    op: str
    id: str
    file: File | None  # the service's result
    error: Exception | None  # the refusal (ApiError, or DRF's ValidationError)


@dataclass(frozen=True)
class BatchAnswer:
    body: dict[str, Any]
    replayed: bool


def files_batch(
    *,
    tenant: Tenant,
    operations: Sequence[Operation],
    render: Callable[[list[Outcome]], dict[str, Any]],
    idempotency_key: str | None = None,
    request_hash: str = "",
) -> BatchAnswer:
    """Run the operations in order and answer ``render(outcomes)``.

    1. With a key: the claim (an advisory lock on the key until commit); a remembered answer
       is replayed, a key used with another body is 409 IDEMPOTENCY_KEY_REUSED.
    2. Each operation in its own savepoint: its refusal, or its service's result or refusal.
    3. With a key: the rendered answer remembered, in the same transaction.
    """
    with transaction.atomic():
        if idempotency_key is not None:
            record = idempotency_claim(
                tenant=tenant, key=idempotency_key, request_hash=request_hash, kind=BATCH
            )
            if record is not None:
                body = {k: v for k, v in record.response_body.items() if k != "kind"}
                return BatchAnswer(body=body, replayed=True)
        outcomes = [_run(operation) for operation in operations]
        body = render(outcomes)
        if idempotency_key is not None:
            idempotency_remember(
                tenant=tenant,
                key=idempotency_key,
                request_hash=request_hash,
                kind=BATCH,
                file=None,
                response=body,
            )
        return BatchAnswer(body=body, replayed=False)


def _run(operation: Operation) -> Outcome:
    if operation.run is None:
        return Outcome(operation.op, operation.id, None, operation.refusal)
    try:
        with transaction.atomic():
            file = operation.run()
    except ApiError as refusal:
        return Outcome(operation.op, operation.id, None, refusal)
    return Outcome(operation.op, operation.id, file, None)
