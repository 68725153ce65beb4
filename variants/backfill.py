"""Placeholders for images whose thumbnail was made before placeholders existed: the file's
current thumbnail is ready but its ``placeholder`` is null. The worker gives every new
thumbnail its placeholder (variants.services); this fills in the older ones, from the
thumbnail's bytes in the store, in batches an operator can stop and start again."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import F

from files.models import File
from storage_service import objectstore
from storage_service.errors import StorageUnavailable
from variants.models import Variant
from variants.placeholder import placeholder_of
from variants.services import THUMBNAIL

logger = logging.getLogger(__name__)

# A thumbnail fits a 256-pixel box: a few tens of KB. Anything far larger is not one.
MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Batch:
    examined: int  # files found without a placeholder, their thumbnail ready
    filled: int  # given one
    skipped: int  # thumbnail unreadable, or the file changed meanwhile
    last_file_id: str | None  # where the next batch starts (None: nothing was left)


def placeholders_backfill_batch(*, after: str = "", size: int = 200) -> Batch:
    """One batch, in file id order after ``after``.

    1. Find up to ``size`` uploaded files without a placeholder whose current version's
       thumbnail is ready (through the variants' unique index, which starts with the file).
    2. For each, read the thumbnail from the store and make its ThumbHash, with no
       transaction open (the store may be slow).
    3. Write it only where the file still has no placeholder and is still at that version,
       one conditional update each: a replace published meanwhile (whose own thumbnail
       brings its own placeholder) or a second run at once is never overwritten, so the
       command is safe to re-run and to run twice.
    """
    found = list(
        Variant.objects.filter(
            file_id__gt=after,
            label=THUMBNAIL.label,
            status=Variant.Status.READY,
            version=F("file__version"),
            file__status=File.Status.UPLOADED,
            file__placeholder__isnull=True,
        )
        .order_by("file_id")
        .values_list("file_id", "version", "output_object__storage_key")[:size]
    )
    filled = skipped = 0
    for file_id, version, storage_key in found:
        placeholder = _placeholder(file_id, storage_key)
        if placeholder is None:
            skipped += 1
            continue
        updated = File.objects.filter(
            id=file_id,
            version=version,
            status=File.Status.UPLOADED,
            placeholder__isnull=True,
        ).update(placeholder=placeholder)
        filled += updated
        skipped += 1 - updated
    last = found[-1][0] if found else None
    return Batch(examined=len(found), filled=filled, skipped=skipped, last_file_id=last)


def _placeholder(file_id: str, storage_key: str | None) -> str | None:
    if storage_key is None:
        return None
    try:
        with objectstore.read(storage_key, max_bytes=MAX_THUMBNAIL_BYTES) as stream:
            data = stream.read()
        return placeholder_of(data)
    except (objectstore.ObjectMissing, objectstore.SourceTooLarge) as exc:
        logger.warning("placeholder of %s skipped: thumbnail unreadable (%s)", file_id, exc)
    except StorageUnavailable:
        raise  # the next run goes on from here; no file is wrongly passed over
    except Exception as exc:  # a thumbnail Pillow cannot read: this file only
        logger.warning("placeholder of %s skipped: %s", file_id, exc)
    return None
