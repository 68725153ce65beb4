"""Model fields shared by the apps' models."""

from __future__ import annotations

from functools import partial

from django.db import models

from storage_service.ids import id_field_length, new_id


def public_id_field(prefix: str) -> models.CharField:
    """The primary key of a resource clients see: ``<prefix>_<26 chars>``, made on insert."""
    return models.CharField(
        primary_key=True,
        max_length=id_field_length(prefix),
        default=partial(new_id, prefix),
        editable=False,
    )
