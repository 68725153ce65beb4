"""The periodic sweeps: purge of expired deleted files, discarded objects, stale uploads,
and the deletion of files whose expiry has passed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.tenancy import Tenant
from events.models import Event
from events.services import events_scrub_file
from files import hooks
from files.events import record_file_event
from files.models import File, FileVersion, IdempotencyRecord, StoredObject
from files.services.common import Status, discard, drop_replacement
from files.services.transitions import Selection, delete_files
from storage_service import objectstore
from storage_service.timefmt import iso


@dataclass
class PurgeReport:
    files: list[str]
    objects_removed: int = 0
    dry_run: bool = False


def files_purge_expired(
    *, grace_days: int | None = None, dry_run: bool = False, now: datetime | None = None
) -> PurgeReport:
    """The purge sweep; safe to run twice and from several processes at once.

    1. Each deleted file past the grace window is marked purged in its own transaction
       (``SKIP LOCKED``: a file another sweep holds is left to it), with ``file.purged``.
    2. Each object of that file (every version, the pending one) is discarded unless a file
       that is not purged still uses it: a copy, or a file still within its grace window.
       The object row is locked first so two files sharing it, purged at once, cannot both
       think the other still needs it.
    3. Discarded objects are removed from the store, then marked purged.

    A purged file is a tombstone: its row keeps the ids, sizes, versions and times, and loses
    its filename (emptied), path and metadata; every stored event about it loses them too
    (``events.services.events_scrub_file``), and ``file.purged`` carries none of them.
    """
    grace = settings.SERVICE_DELETE_GRACE_DAYS if grace_days is None else grace_days
    cutoff = (now or timezone.now()) - timedelta(days=grace)
    due = File.objects.filter(status=Status.DELETED, purged_at__isnull=True, deleted_at__lte=cutoff)
    if dry_run:
        return PurgeReport(
            files=list(due.order_by("deleted_at").values_list("id", flat=True)), dry_run=True
        )
    purged: list[str] = []
    while True:
        batch = list(
            due.order_by("deleted_at").values_list("id", flat=True)[
                : settings.SERVICE_PURGE_BATCH_SIZE
            ]
        )
        progressed = False
        for file_id in batch:
            if _purge_one(file_id, cutoff):
                purged.append(file_id)
                progressed = True
        if len(batch) < settings.SERVICE_PURGE_BATCH_SIZE or not progressed:
            break
    removed = objects_remove_discarded()
    return PurgeReport(files=purged, objects_removed=removed)


def _purge_one(file_id: str, cutoff: datetime) -> bool:
    with transaction.atomic():
        file = (
            File.objects.select_for_update(skip_locked=True)
            .select_related("project")
            .filter(
                id=file_id, status=Status.DELETED, purged_at__isnull=True, deleted_at__lte=cutoff
            )
            .first()
        )
        if file is None:
            return False
        file.purged_at = timezone.now()
        # The tombstone: nothing that names or describes the content stays.
        file.filename = ""
        file.path = None
        file.metadata = None
        file.save(update_fields=["purged_at", "filename", "path", "metadata"])
        object_ids = set(file.versions.values_list("stored_object_id", flat=True))
        object_ids.add(file.current_object_id)
        if file.replacement_object_id:
            object_ids.add(file.replacement_object_id)
        for stored in (
            StoredObject.objects.select_for_update().filter(id__in=object_ids).order_by("id")
        ):
            still_used = (
                FileVersion.objects.filter(
                    stored_object=stored, file__purged_at__isnull=True
                ).exists()
                or File.objects.filter(
                    Q(current_object=stored) | Q(replacement_object=stored), purged_at__isnull=True
                ).exists()
            )
            if not still_used:
                discard(stored)
        # What other apps keep for this file alone (variant results) goes too.
        hooks.file_purged.send(file=file)
        record_file_event(Event.Type.FILE_PURGED, file, purgedAt=iso(file.purged_at))
        # Last, so file.purged itself carries none of the scrubbed keys either.
        events_scrub_file(project_id=file.project_id, file_id=file.id)
        return True


def objects_remove_discarded(*, limit: int = 1000) -> int:
    """Remove discarded objects from the store, then mark them purged. Returns how many."""
    removed = 0
    while True:
        with transaction.atomic():
            batch = list(
                StoredObject.objects.select_for_update(skip_locked=True)
                .filter(state=StoredObject.State.DISCARDED)
                .order_by("id")[:limit]
            )
            if not batch:
                return removed
            # Store first, then the rows: if the store fails, the rows stay discarded and the
            # next sweep tries again; a delete of an absent key succeeds.
            objectstore.delete([stored.storage_key for stored in batch])
            StoredObject.objects.filter(id__in=[s.id for s in batch]).update(
                state=StoredObject.State.PURGED, purged_at=timezone.now()
            )
            removed += len(batch)
        if len(batch) < limit:
            return removed


def files_expire_pending(*, now: datetime | None = None) -> int:
    """Mark single uploads whose bytes never arrived as failed, and drop stale replacements."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.SERVICE_PENDING_UPLOAD_EXPIRY_HOURS)
    expired = 0
    with transaction.atomic():
        stale = list(
            File.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("current_object")
            .filter(status=Status.PENDING, current_object__upload_expires_at__lt=cutoff)[:1000]
        )
        for file in stale:
            file.status = Status.FAILED
            file.save(update_fields=["status", "updated_at"])
            discard(file.current_object)
            expired += 1
        stale_replacements = list(
            File.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("replacement_object")
            .filter(replacement_object__upload_expires_at__lt=cutoff)[:1000]
        )
        for file in stale_replacements:
            drop_replacement(file)
            file.save(update_fields=["replacement_object", "updated_at"])
    # Idempotency keys are remembered for a day; older records only take space.
    IdempotencyRecord.objects.filter(
        created_at__lt=timezone.now() - timedelta(hours=settings.SERVICE_IDEMPOTENCY_TTL_HOURS)
    ).delete()
    return expired


def files_expire_due(*, now: datetime | None = None, limit: int | None = None) -> int:
    """The expiry sweep: delete each file whose ``expiresAt`` has passed, as DELETE would
    (restorable in the grace window, then purged), with ``file.expired`` instead of
    ``file.deleted``. Returns how many it deleted.

    Safe to run twice and from several processes at once, and bounded:

    1. Each batch of SERVICE_EXPIRY_BATCH_SIZE due files is its own short transaction that
       claims its rows with ``FOR UPDATE SKIP LOCKED`` (soonest expiry first, through
       file_expiry_due): a file another sweep, or a client's DELETE or PATCH, holds is left
       to it, and a claimed row is re-read under the lock, so it is due and not deleted.
    2. One run stops after ``limit`` files (SERVICE_EXPIRY_MAX_PER_RUN); the next run goes
       on from there, so a million files expiring at once never make one long transaction.
    """
    cutoff = now or timezone.now()
    budget = settings.SERVICE_EXPIRY_MAX_PER_RUN if limit is None else limit
    expired = 0
    while expired < budget:
        size = min(settings.SERVICE_EXPIRY_BATCH_SIZE, budget - expired)
        with transaction.atomic():
            batch = list(
                File.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("project")
                .filter(expires_at__lte=cutoff)
                .exclude(status=Status.DELETED)
                .order_by("expires_at")[:size]
            )
            # The rows are locked: the transition, per tenant, takes exactly these.
            by_tenant: dict[Tenant, list[str]] = defaultdict(list)
            for file in batch:
                by_tenant[Tenant.of(file)].append(file.id)
            for tenant, ids in by_tenant.items():
                rows = Selection("f.id = ANY(%s) AND f.expires_at <= %s", [ids, cutoff])
                delete_files(tenant=tenant, rows=rows, expired=True)
        expired += len(batch)
        if len(batch) < size:
            break
    return expired
