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


def concrete_columns(model: type[models.Model], alias: str | None = None) -> tuple[list[str], str]:
    """The attribute names of ``model``'s concrete fields, and their columns as a SQL select
    list (of the table alias ``alias`` when given), in the same order: what a statement
    written once needs to build instances with ``Model.from_db`` or ``raw()``."""
    fields = model._meta.concrete_fields
    prefix = f"{alias}." if alias else ""
    return [field.attname for field in fields], ", ".join(
        f'{prefix}"{field.column}"' for field in fields
    )
