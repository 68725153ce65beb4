"""Single-row reads on the hottest paths, without the ORM's per-query SQL compilation.

Every API request resolves its key, and the commonest request reads one file. Building those
two queries through the ORM costs about 1 ms of CPU each on this machine, several times the
query itself; here the SQL is built once per model and rows become model instances exactly as
the ORM makes them: each column's value goes through the converters the ORM's compiler would
apply (the backend's and the field's own ``from_db_value``, e.g. ``JSONField`` parsing the
text psycopg hands over), then ``Model.from_db``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.expressions import Col

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


@cache
def columns(model: type[Model]) -> tuple[list[str], str]:
    """The model's attribute names and its quoted column list (``"t"."c", ...``)."""
    table = model._meta.db_table
    fields = model._meta.concrete_fields
    names = [field.attname for field in fields]
    quoted = ", ".join(f'"{table}"."{field.column}"' for field in fields)
    return names, quoted


@cache
def _converters(model: type[Model], alias: str) -> tuple[tuple[int, list[Converter], Col], ...]:
    """Per column position, the converters ``SQLCompiler.get_converters`` would pick."""
    db = connections[alias]
    found = []
    for position, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        chain = [*db.ops.get_db_converters(column), *column.get_db_converters(db)]
        if chain:
            found.append((position, chain, column))
    return tuple(found)


def instance(model: type[M], values: Sequence[Any]) -> M:
    """A model instance from one row of ``columns(model)``, converted as the ORM converts."""
    names, _ = columns(model)
    row = list(values)
    db = connections[DEFAULT_DB_ALIAS]
    for position, chain, column in _converters(model, DEFAULT_DB_ALIAS):
        value = row[position]
        for convert in chain:
            value = convert(value, column, db)
        row[position] = value
    return model.from_db(DEFAULT_DB_ALIAS, names, row)


def fetch_row(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None
