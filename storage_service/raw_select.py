"""A model's columns in a raw SELECT, and its rows as model instances, for the few read
statements written as SQL (the selectors say why each one is)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

M = TypeVar("M", bound=models.Model)


class SelectList(Generic[M]):
    """A model's concrete fields as the select list of a statement written once (of the table
    alias ``alias`` when given), and how one of its rows becomes an instance: each value
    converted as the ORM converts it (a JSONField's text decoded), then ``Model.from_db``.
    ``width`` is how many columns of a joined row are this model's."""

    def __init__(self, model: type[M], alias: str | None = None) -> None:
        # The documented _meta API: the model's own fields that have a column, in order.
        fields = [
            field
            for field in model._meta.get_fields()
            # A many-to-many field is concrete, but its column is in its own table.
            if isinstance(field, models.Field) and field.concrete and not field.many_to_many
        ]
        prefix = f"{alias}." if alias else ""
        self.model = model
        self.sql = ", ".join(f'{prefix}"{field.column}"' for field in fields)
        self.width = len(fields)
        self._attnames = [field.attname for field in fields]
        # Worked out once: most fields' values need no conversion.
        self._converted = [
            (at, field) for at, field in enumerate(fields) if hasattr(field, "from_db_value")
        ]

    def instance(self, values: Sequence[Any], connection: BaseDatabaseWrapper) -> M:
        if self._converted:
            values = list(values)
            for at, field in self._converted:
                # No expression: only a JSONField's key transforms look at it.
                values[at] = field.from_db_value(values[at], None, connection)
        return self.model.from_db(connection.alias, self._attnames, values)
