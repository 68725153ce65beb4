"""Every state change of a variant: request, processing (claim, render, finish), sweep, and
what variants does when files announces a published version or a purged file."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import PurePosixPath
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.services import bandwidth_record
from accounts.tenancy import Tenant
from events.models import Event
from files.events import record_file_event
from files.models import File, FileVersion, StoredObject
from files.selectors import file_get
from files.services.common import Status, discard, lock_file
from storage_service import objectstore
from storage_service.celery import app
from storage_service.errors import (
    FileNotUploaded,
    NotProcessable,
    StorageUnavailable,
    ValidationError,
    VariantLimitReached,
    VariantNotFound,
    VariantNotReady,
)
from storage_service.timefmt import iso
from variants import imaging, readiness
from variants.imaging import ELIGIBLE_TYPES, ImageRejected, Params
from variants.models import Variant
from variants.placeholder import placeholder_of
from variants.selectors import variant_of
from variants.serializers import variant_json

logger = logging.getLogger(__name__)
VStatus = Variant.Status

# Every eligible upload and replacement gets this one: a 256-pixel box, aspect ratio kept.
THUMBNAIL = Params(width=256, height=256, fit="inside", format="webp", quality=80)
# Sent by name: variants.tasks imports this module.
PROCESS_TASK = "variants.tasks.process_variant"


def params_of(variant: Variant) -> Params:
    return Params(
        width=variant.width,
        height=variant.height,
        fit=variant.fit,
        format=variant.format,
        quality=variant.quality,
    )


def enqueue(variant_id: str) -> None:
    """Send the processing message. A broker that is down loses nothing: the stale sweep
    finds the variant still pending and sends it again, so the caller never fails for it."""
    try:
        app.send_task(PROCESS_TASK, args=[variant_id])
    except Exception:
        logger.warning("could not enqueue variant %s; the sweep will retry", variant_id)


def variant_get_or_create(
    *, file: File, version: int, source_object_id: int, params: Params
) -> tuple[Variant, bool]:
    """The variant of these parameters for this file version, created (and its work sent after
    commit) only if new. The caller holds the file row's lock, which serialises identical
    requests; the unique constraint (file, version, label) is the backstop."""
    variant, created = Variant.objects.get_or_create(
        file=file,
        version=version,
        label=params.label,
        defaults={
            "project_id": file.project_id,
            "mode": file.mode,
            "source_object_id": source_object_id,
            "width": params.width,
            "height": params.height,
            "fit": params.fit,
            "format": params.format,
            "quality": params.quality,
        },
    )
    if created:
        transaction.on_commit(partial(enqueue, variant.id))
    return variant, created


# --- What files announces (registered in VariantsConfig.ready) -----------------------------


def thumbnail_schedule(*, file: File, stored: StoredObject, version: int) -> None:
    """files' ``version_published``, inside the publishing transaction: an eligible image
    (judged by its sniffed bytes) gets its thumbnail variant, made after commit. The previous
    version's placeholder goes: the new thumbnail brings the new one."""
    if file.placeholder is not None:
        file.placeholder = None
        File.objects.filter(id=file.id).update(placeholder=None)
    if stored.sniffed_type in ELIGIBLE_TYPES:
        variant_get_or_create(
            file=file, version=version, source_object_id=stored.id, params=THUMBNAIL
        )


def variants_discard_outputs(*, file: File) -> None:
    """files' ``file_purged``, in the purge's transaction: hand every variant result of the
    file to the objects sweep. A result belongs to exactly one variant, so nothing else can
    need it."""
    StoredObject.objects.filter(
        id__in=Variant.objects.filter(file=file, output_object__isnull=False).values(
            "output_object_id"
        ),
        state__in=[StoredObject.State.PENDING, StoredObject.State.LIVE],
    ).update(state=StoredObject.State.DISCARDED)


# --- Requests ------------------------------------------------------------------------------


def check_processable(*, sniffed_type: str | None, size: int) -> None:
    """Refuse (NOT_PROCESSABLE) a source that is not an eligible image of at most
    SERVICE_VARIANT_MAX_SOURCE_BYTES."""
    if sniffed_type not in ELIGIBLE_TYPES:
        found = sniffed_type or "not a recognisable image"
        raise NotProcessable(
            f"Variants are made from JPEG, PNG, WebP, AVIF, GIF and TIFF images; "
            f"the stored bytes are {found}.",
            details={"detectedType": sniffed_type},
        )
    limit = settings.SERVICE_VARIANT_MAX_SOURCE_BYTES
    if size > limit:
        raise NotProcessable(
            f"The file is {size} bytes; variants are made from originals of at most {limit} bytes.",
            details={"size": size, "maxSourceBytes": limit},
        )


def variant_transform(
    *, tenant: Tenant, file_id: str, params: Params, version: int | None = None
) -> Variant:
    """Ask for a variant of the file's current version (or of ``version``, one it published:
    a delivery URL's pin); identical parameters give the same variant and no new work (the
    file row's lock serialises two identical requests)."""
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        if file.status != Status.UPLOADED:
            raise FileNotUploaded(f"The file is {file.status}; only an uploaded file has variants.")
        source_id, sniffed_type, size = file.current_object_id, file.sniffed_type, file.size
        if version is None or version == file.version:
            version = file.version
        else:
            published = (
                FileVersion.objects.select_related("stored_object")
                .filter(file=file, version=version)
                .first()
            )
            if published is None:
                raise ValidationError(
                    f"The file never had version {version}.", details={"version": ["Unknown."]}
                )
            source_id = published.stored_object_id
            sniffed_type, size = published.stored_object.sniffed_type, published.size
        check_processable(sniffed_type=sniffed_type, size=size)
        existing = Variant.objects.filter(file=file, version=version)
        if not existing.filter(label=params.label).exists():
            # Counted under the file's lock, so two new requests at once cannot both pass.
            cap = settings.SERVICE_VARIANT_MAX_PER_VERSION
            if existing.count() >= cap:
                raise VariantLimitReached(
                    f"Version {version} of the file already has {cap} variants, the most "
                    f"a version may have; ask again for one of them, or replace the file.",
                    details={"fileVersion": version, "limit": cap},
                )
        variant, _ = variant_get_or_create(
            file=file, version=version, source_object_id=source_id, params=params
        )
        return variant


def variant_download_url(
    *, tenant: Tenant, file_id: str, variant_id: str, expires_in: int = 3600
) -> objectstore.PresignedDownload:
    """A presigned GET of a ready variant; counted as bandwidth like a file download.
    Lock-free, like the file's download-url."""
    file = file_get(tenant=tenant, file_id=file_id)
    with transaction.atomic():
        variant = variant_of(file=file, variant_id=variant_id)
        if variant is None:
            raise VariantNotFound("No such variant of this file.")
        if variant.status != VStatus.READY or variant.output_object is None:
            raise VariantNotReady(
                f"The variant is {variant.status}; only a ready variant can be downloaded.",
                details={"status": variant.status},
            )
        stem = PurePosixPath(file.filename).stem or "image"
        download = objectstore.presign_get(
            key=variant.output_object.storage_key,
            expires_in=expires_in,
            filename=f"{stem}_{variant.label}.{imaging.FORMATS[variant.format][2]}",
            content_type=imaging.FORMATS[variant.format][1],
        )
        record_file_event(
            Event.Type.FILE_DOWNLOADED,
            file,
            expiresAt=iso(download.expires_at),
            variantId=variant.id,
            label=variant.label,
        )
        bandwidth_record(tenant=tenant, size=variant.size or 0)
        return download


# --- Processing (workers) ------------------------------------------------------------------


class TimeUp(BaseException):
    """The transform's soft time limit, as the worker raises it (variants.tasks). Not an
    Exception: botocore wraps any Exception raised while it sends a request and retries, so
    Celery's SoftTimeLimitExceeded, arriving while the store hangs, would be swallowed there."""


@dataclass(frozen=True)
class Outcome:
    status: str  # ready, failed, retry (back to pending), skipped (not ours to do)
    reason: str = ""


def variant_process(*, variant_id: str) -> Outcome:
    """Make one variant; safe to run twice, and from any number of workers at once.

    1. Claim it: ``pending -> processing`` with a conditional update and a fresh claim token;
       a variant that is not pending (done, or claimed by another worker) is left alone.
    2. Read the original from the store and render it (imaging.render); any refusal of the
       bytes ends ``failed`` with the reason and ``file.processing_failed``.
    3. Record the result's object (state pending) before writing its bytes, so a worker dying
       after the write leaves a row the retry discards, never an orphan in the store.
    4. Finish under the file's lock: ready, dimensions, size, ``file.processed`` -- unless the
       claim is no longer ours or the file was purged meanwhile, in which case the result is
       discarded.
    A store that does not answer puts the variant back to pending for the sweep to retry.
    """
    claim = secrets.token_hex(16)
    now = timezone.now()
    claimed = Variant.objects.filter(id=variant_id, status=VStatus.PENDING).update(
        status=VStatus.PROCESSING,
        claim=claim,
        attempts=F("attempts") + 1,
        started_at=now,
        updated_at=now,
    )
    if claimed != 1:
        return Outcome("skipped")
    variant = Variant.objects.select_related("source_object").get(id=variant_id)
    recorded = variant.source_object.size
    if recorded is not None and recorded > settings.SERVICE_VARIANT_MAX_SOURCE_BYTES:
        # Known too large from its row: refused without a byte asked of the store. (The read
        # below still stops at the cap for an object that grew since.)
        return _fail(
            variant_id,
            claim,
            objectstore.too_large(recorded, settings.SERVICE_VARIANT_MAX_SOURCE_BYTES),
        )
    try:
        with objectstore.read(
            variant.source_object.storage_key,
            max_bytes=settings.SERVICE_VARIANT_MAX_SOURCE_BYTES,
        ) as source:
            rendered = imaging.render(
                source,
                params_of(variant),
                max_pixels=settings.SERVICE_VARIANT_MAX_PIXELS,
                max_upscale=settings.SERVICE_VARIANT_MAX_UPSCALE,
            )
    except (ImageRejected, objectstore.SourceTooLarge) as exc:
        return _fail(variant_id, claim, str(exc))
    except (SoftTimeLimitExceeded, TimeUp):
        # Failed, not retried: the same bytes would take as long again.
        return _fail(
            variant_id, claim, _took_too_long(settings.SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS)
        )
    except objectstore.ObjectMissing:
        return _fail(variant_id, claim, "The original's bytes are no longer in the store.")
    except StorageUnavailable:
        return _release(variant_id, claim)
    except MemoryError:
        return _fail(variant_id, claim, "The image needs more memory than a worker has.")
    except Exception:
        # A bug or an unforeseen decoder error: the variant fails, the worker lives on.
        logger.exception("variant %s: unexpected error while rendering", variant_id)
        return _fail(variant_id, claim, "The image could not be processed.")

    # The thumbnail's ThumbHash, made here, outside the transaction that records it.
    placeholder = placeholder_of(rendered.data) if variant.label == THUMBNAIL.label else None
    output = _reserve_output(variant_id, claim, rendered.content_type, len(rendered.data))
    if output is None:
        return Outcome("skipped")
    try:
        etag = objectstore.write(
            output.storage_key, rendered.data, content_type=rendered.content_type
        )
    except StorageUnavailable:
        return _release(variant_id, claim)
    except (SoftTimeLimitExceeded, TimeUp):
        return _fail(
            variant_id, claim, _took_too_long(settings.SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS)
        )
    return _finish(variant_id, claim, output, rendered, etag, placeholder)


def _took_too_long(seconds: int) -> str:
    return f"Processing took longer than {seconds} s, the most a variant may take."


def variant_fail_timed_out(*, variant_id: str, seconds: int) -> Outcome:
    """A transform whose process was killed at the hard time limit (sent by the worker's
    parent process, see variants.tasks): failed with the reason, so the stale sweep does not
    run it again. Only a variant still processing is changed; the killed attempt was the only
    one possible, since the sweep sends nothing again before SERVICE_VARIANT_STALE_SECONDS,
    which is longer than the hard limit."""
    with transaction.atomic():
        file_id = Variant.objects.filter(id=variant_id).values_list("file_id", flat=True).first()
        if file_id is None:
            return Outcome("skipped")
        file = File.objects.select_for_update().select_related("project").get(id=file_id)
        variant = Variant.objects.select_for_update().get(id=variant_id)
        if variant.status != VStatus.PROCESSING:
            return Outcome("skipped")
        reason = _took_too_long(seconds)
        _mark_failed(file, variant, reason)
        return Outcome("failed", reason)


def variant_waiting_project(*, variant_id: str) -> str | None:
    """The project of a variant that still waits for a worker (pending), else None."""
    return (
        Variant.objects.filter(id=variant_id, status=VStatus.PENDING)
        .values_list("project_id", flat=True)
        .first()
    )


def variant_defer(*, variant_id: str) -> None:
    """The variant waits for its project's slot: its message is sent again later. Touched so
    the stale sweep, which resends variants untouched for SERVICE_VARIANT_STALE_SECONDS (a
    lost message), does not add copies of a message that is not lost."""
    Variant.objects.filter(id=variant_id, status=VStatus.PENDING).update(updated_at=timezone.now())


def _locked(variant_id: str, claim: str) -> tuple[File, Variant] | None:
    """The file then the variant, locked in that order (the purge locks the file first too);
    None when the variant is no longer processing under this claim."""
    file_id = Variant.objects.filter(id=variant_id).values_list("file_id", flat=True).first()
    if file_id is None:
        return None
    file = File.objects.select_for_update().select_related("project").get(id=file_id)
    variant = Variant.objects.select_for_update().get(id=variant_id)
    if variant.status != VStatus.PROCESSING or variant.claim != claim:
        return None
    return file, variant


def _reserve_output(
    variant_id: str, claim: str, content_type: str, size: int
) -> StoredObject | None:
    with transaction.atomic():
        locked = _locked(variant_id, claim)
        if locked is None:
            return None
        _, variant = locked
        if variant.output_object_id is not None:
            # A previous attempt's result that never became ready.
            discard(StoredObject.objects.get(id=variant.output_object_id))
        output = StoredObject.objects.create(
            project_id=variant.project_id,
            mode=variant.mode,
            storage_key=objectstore.new_key(variant.project_id),
            declared_type=content_type,
            declared_size=size,
        )
        variant.output_object = output
        variant.save(update_fields=["output_object", "updated_at"])
        return output


def _finish(
    variant_id: str,
    claim: str,
    output: StoredObject,
    rendered: imaging.Rendered,
    etag: str,
    placeholder: str | None,
) -> Outcome:
    with transaction.atomic():
        locked = _locked(variant_id, claim)
        if locked is None or locked[0].purged_at is not None:
            # Someone else's claim finishes the variant, or the file is gone: drop our bytes.
            discard(StoredObject.objects.select_for_update().get(id=output.id))
            return Outcome("skipped")
        file, variant = locked
        output.state = StoredObject.State.LIVE
        output.size = len(rendered.data)
        output.checksum = f"etag:{etag}"
        output.sniffed_type = rendered.content_type
        output.save(update_fields=["state", "size", "checksum", "sniffed_type"])
        variant.status = VStatus.READY
        variant.output_width = rendered.width
        variant.output_height = rendered.height
        variant.size = len(rendered.data)
        variant.finished_at = timezone.now()
        variant.save()
        if placeholder is not None and variant.version == file.version:
            # The file's current thumbnail: its placeholder shows in every file object.
            File.objects.filter(id=file.id).update(placeholder=placeholder)
        _record(Event.Type.FILE_PROCESSED, file, variant)
        transaction.on_commit(partial(readiness.announce, variant.id))
        return Outcome("ready")


def _fail(variant_id: str, claim: str, reason: str) -> Outcome:
    with transaction.atomic():
        locked = _locked(variant_id, claim)
        if locked is None:
            return Outcome("skipped")
        file, variant = locked
        _mark_failed(file, variant, reason)
        return Outcome("failed", reason)


def _mark_failed(file: File, variant: Variant, reason: str) -> None:
    if variant.output_object_id is not None:
        discard(StoredObject.objects.get(id=variant.output_object_id))
    variant.status = VStatus.FAILED
    variant.failure_reason = reason
    variant.finished_at = timezone.now()
    variant.save()
    _record(Event.Type.FILE_PROCESSING_FAILED, file, variant, reason=reason)
    transaction.on_commit(partial(readiness.announce, variant.id))


def _release(variant_id: str, claim: str) -> Outcome:
    """The store did not answer: back to pending; the sweep sends it again later."""
    updated = Variant.objects.filter(id=variant_id, status=VStatus.PROCESSING, claim=claim).update(
        status=VStatus.PENDING, claim="", updated_at=timezone.now()
    )
    logger.warning("variant %s: object store unavailable; left for the sweep", variant_id)
    return Outcome("retry" if updated else "skipped")


def _record(type: Event.Type, file: File, variant: Variant, **extra: Any) -> None:
    record_file_event(
        type,
        file,
        variantId=variant.id,
        label=variant.label,
        sourceVersion=variant.version,
        variant=variant_json(variant),
        **extra,
    )


# --- The stale sweep -----------------------------------------------------------------------


def variants_requeue_stale(*, now: datetime | None = None, limit: int = 500) -> int:
    """Send again the variants left pending or processing too long (a lost message, a dead
    worker); one that has been claimed SERVICE_VARIANT_MAX_ATTEMPTS times fails instead.
    Safe to run twice and from several processes (``SKIP LOCKED``). Returns how many moved."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.SERVICE_VARIANT_STALE_SECONDS)
    moved = 0
    with transaction.atomic():
        stale = list(
            Variant.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("file__project")
            .filter(status__in=[VStatus.PENDING, VStatus.PROCESSING], updated_at__lt=cutoff)
            .order_by("updated_at")[:limit]
        )
        for variant in stale:
            if variant.attempts >= settings.SERVICE_VARIANT_MAX_ATTEMPTS:
                _mark_failed(
                    variant.file,
                    variant,
                    f"Gave up after {variant.attempts} attempts (worker lost or store down).",
                )
            else:
                # A worker still holding the old claim will find it gone and drop its result.
                variant.status = VStatus.PENDING
                variant.claim = ""
                variant.save(update_fields=["status", "claim", "updated_at"])
                transaction.on_commit(lambda vid=variant.id: enqueue(vid))  # type: ignore[misc]
            moved += 1
    return moved
