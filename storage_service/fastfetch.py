"""Single-row reads on the hottest paths, without the ORM's per-query SQL compilation.

Every API request resolves its key, and the commonest request reads one file. Building those
two queries through the ORM costs about 1 ms of CPU each on this machine, several times the
query itself; here the SQL is built once per model and rows become model instances through
``Model.from_db``, exactly as the ORM would make them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


@cache
def columns(model: type[Model]) -> tuple[list[str], str]:
    """The model's attribute names and its quoted column list (``"t"."c", ...``)."""
    table = model._meta.db_table
    fields = model._meta.concrete_fields
    names = [field.attname for field in fields]
    quoted = ", ".join(f'"{table}"."{field.column}"' for field in fields)
    return names, quoted


@cache
def _converted(model: type[Model]) -> list[tuple[int, Any]]:
    """The columns whose database value the field converts (a JSONField's text)."""
    return [
        (index, field)
        for index, field in enumerate(model._meta.concrete_fields)
        if hasattr(field, "from_db_value")
    ]


def instance(model: type[M], values: Sequence[Any]) -> M:
    """The row as the ORM would make it: ``from_db`` after the fields' own conversions
    (which the ORM's compiler applies, not ``from_db``: without them a JSONField would hold
    its JSON text, and ``metadata`` would be answered as a string)."""
    names, _ = columns(model)
    row = list(values)
    for index, field in _converted(model):
        if row[index] is not None:
            row[index] = field.from_db_value(row[index], None, connection)
    return model.from_db(DEFAULT_DB_ALIAS, names, row)


def fetch_row(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None
