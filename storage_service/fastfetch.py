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
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init
from django.db.models.sql import InsertQuery

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


@cache
def _plain(model: type[Model]) -> bool:
    """Whether ``from_db`` of ``model`` only sets each field's value on a fresh instance:
    Django's own ``from_db``, no ``__init__`` of the model's own, and nothing listening to
    ``pre_init`` or ``post_init`` for it (an ``ImageField``'s dimensions, say), and no field
    whose attribute is a descriptor that does more than store the value (a ``FileField``)."""
    return (
        all(
            field.descriptor_class  # type: ignore[attr-defined]  # not in django-stubs
            in (DeferredAttribute, ForeignKeyDeferredAttribute)
            for field in model._meta.concrete_fields
        )
        and model.from_db.__func__ is Model.from_db.__func__  # type: ignore[attr-defined]
        and model.__init__ is Model.__init__
        and not pre_init.has_listeners(model)
        and not post_init.has_listeners(model)
    )


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
    if not _plain(model):
        return model.from_db(DEFAULT_DB_ALIAS, names, row)
    # What Model.__init__ leaves for a full row, set directly: __init__ spends ~30 us per
    # instance on two signals with no receiver and a setattr through a descriptor per field,
    # and a page of files is 20 instances. tests/ops/test_hot_paths.py compares the two.
    new: M = model.__new__(model)
    state = new._state = ModelState()
    state.adding, state.db = False, DEFAULT_DB_ALIAS
    new.__dict__.update(zip(names, row, strict=True))
    return new


def prepared_cursor() -> Any:
    """A cursor whose statements the server prepares once per connection (the backend's
    ``prepared_cursor``: storage_service/postgres/), for the statements every request runs;
    a plain cursor on a backend without it."""
    prepare = getattr(connection, "prepared_cursor", None)
    return prepare() if prepare is not None else connection.cursor()


def fetch_row(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


# An INSERT's SQL by its shape (model, columns, expressions, returning), compiled once: the
# compiler cost an upload start a tenth of its CPU, twice over, for the same two texts.
_INSERTS: dict[tuple[Any, ...], str] = {}


def insert_sql(
    obj: Model, *, expressions: dict[str, str] | None = None, returning: str | None = None
) -> tuple[str, list[Any]]:
    """The ``INSERT`` of a new ``obj`` as the ORM's ``save()`` would send it, for a caller
    that sends it as part of a larger statement: the values through Django's insert compiler
    (each field's ``pre_save`` and ``get_db_prep_save``), a database-made primary key
    (auto field) left to the database. ``expressions`` puts SQL in place of the value of
    some attributes (``{"current_object_id": "(SELECT id FROM stored)"}``); ``returning``
    names a column to return. The instance is marked saved: the caller must send it."""
    expressions = expressions or {}
    returned = obj._meta.db_returning_fields
    fields = [
        field
        for field in obj._meta.local_concrete_fields
        if not (field in returned and getattr(obj, field.attname) is None)
    ]
    valued = [field for field in fields if field.attname not in expressions]
    shape = (type(obj), tuple(field.attname for field in fields), *expressions.items(), returning)
    sql = _INSERTS.get(shape)
    if sql is not None:
        # What the compiler does for each value (pre_save_val, then prepare_value) when no
        # value is an expression; its SQL for this shape is known already.
        values = [field.pre_save(obj, True) for field in valued]
        if not any(hasattr(value, "resolve_expression") for value in values):
            obj._state.adding, obj._state.db = False, DEFAULT_DB_ALIAS
            return sql, [
                field.get_db_prep_save(value, connection=connection)
                for field, value in zip(valued, values, strict=True)
            ]
    query = InsertQuery(type(obj))
    query.insert_values(valued, [obj])
    [(compiled, params)] = query.get_compiler(using=DEFAULT_DB_ALIAS).as_sql()
    # Every value of these models is a plain placeholder; anything else would need its own.
    if not compiled.endswith(f"VALUES ({', '.join(['%s'] * len(valued))})"):
        raise ValueError(f"unexpected placeholders in {compiled!r}")
    table = connection.ops.quote_name(obj._meta.db_table)
    names = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(expressions.get(field.attname, "%s") for field in fields)
    sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders})"
    if returning is not None:
        sql += f" RETURNING {connection.ops.quote_name(returning)}"
    _INSERTS[shape] = sql
    obj._state.adding, obj._state.db = False, DEFAULT_DB_ALIAS
    return sql, list(params)
