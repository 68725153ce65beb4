"""The kinds of job: what each type does, registered by the app that owns the work.

The runner (jobs/services.py) knows how to take a job through its batches, resume it after a
failure and end it; what a batch changes is the owning app's. That app sits above this one
and is never imported by it, so it registers its kinds in its ``AppConfig.ready`` (files: the
folder move, delete and restore).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from accounts.tenancy import Tenant
from jobs.models import Job


class Batch(Protocol):
    """What one batch did: how many items it changed, and the last of them in the order the
    job walks (the job's next cursor)."""

    @property
    def count(self) -> int: ...

    @property
    def last_id(self) -> str | None: ...


class BatchOf(Protocol):
    def __call__(self, job: Job, tenant: Tenant, *, after: str, size: int) -> Batch:
        """Change the next ``size`` items after the cursor ``after`` ("": from the start), in
        the caller's transaction, each with its event."""
        ...


class LeftOf(Protocol):
    def __call__(self, job: Job, tenant: Tenant) -> int:
        """How many items the job would still change (0 when it is done)."""
        ...


@dataclass(frozen=True)
class Kind:
    batch: BatchOf
    left: LeftOf
    # The event recorded with the job's end (its data: the job's id, params, files, status).
    finished_event: str


_kinds: dict[str, Kind] = {}


def register(type: Job.Type, kind: Kind) -> None:
    """Called from the owning app's ``AppConfig.ready``; the same kind again changes nothing."""
    if _kinds.get(type, kind) != kind:
        raise RuntimeError(f"job type {type} is registered already")
    _kinds[type] = kind


def kind_of(type: str) -> Kind:
    """The registered kind of a job's type (KeyError: no app registered it)."""
    return _kinds[type]
