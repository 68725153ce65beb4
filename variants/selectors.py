"""Read queries of the variants app."""

from __future__ import annotations

from files.models import File
from storage_service.ids import looks_like_id
from variants.models import Variant


def variant_of(*, file: File, variant_id: str) -> Variant | None:
    """One variant of the file, with its stored output; None for any other id."""
    if not looks_like_id(variant_id, "var"):
        return None
    return Variant.objects.select_related("output_object").filter(file=file, id=variant_id).first()
