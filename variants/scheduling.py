"""What the files app calls into: the automatic thumbnail on publish, and the purge.

Kept apart from variants.services (which builds on files.services) so that files.services can
import it without a cycle; tasks are sent by name for the same reason.
"""

from __future__ import annotations

import logging
from functools import partial

from django.db import transaction

from files.models import File, StoredObject
from storage_service.celery import app
from variants.imaging import ELIGIBLE_TYPES, Params
from variants.models import Variant

logger = logging.getLogger(__name__)

# Every eligible upload and replacement gets this one: a 256-pixel box, aspect ratio kept.
THUMBNAIL = Params(width=256, height=256, fit="inside", format="webp", quality=80)
PROCESS_TASK = "variants.tasks.process_variant"


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


def thumbnail_schedule(*, file: File, stored: StoredObject, version: int) -> Variant | None:
    """Called by files.services.common.publish, inside its transaction: an eligible image
    (judged by its sniffed bytes) gets its thumbnail variant, made after commit."""
    if stored.sniffed_type not in ELIGIBLE_TYPES:
        return None
    variant, _ = variant_get_or_create(
        file=file, version=version, source_object_id=stored.id, params=THUMBNAIL
    )
    return variant


def variants_discard_outputs(*, file: File) -> int:
    """Called by the purge, in its transaction: hand every variant result of the file to the
    objects sweep. A result belongs to exactly one variant, so nothing else can need it."""
    return StoredObject.objects.filter(
        id__in=Variant.objects.filter(file=file, output_object__isnull=False).values(
            "output_object_id"
        ),
        state__in=[StoredObject.State.PENDING, StoredObject.State.LIVE],
    ).update(state=StoredObject.State.DISCARDED)
