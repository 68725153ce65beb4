"""Read queries of the delivery app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, connection
from django.db.models import Field, Model

from accounts.tenancy import Tenant
from delivery.models import DeliveryKey
from files.models import File, StoredObject
from storage_service.errors import DeliveryKeyNotFound
from storage_service.ids import looks_like_id
from variants.models import Variant


def delivery_key_get(*, tenant: Tenant, key_id: str, for_update: bool = False) -> DeliveryKey:
    """One of the tenant's keys, active or revoked; 404 for any other id."""
    key = None
    if looks_like_id(key_id, "dk"):
        keys = DeliveryKey.objects.for_tenant(tenant)
        if for_update:
            keys = keys.select_for_update()
        key = keys.filter(id=key_id).first()
    if key is None:
        raise DeliveryKeyNotFound("No such delivery key.")
    return key


def delivery_key_list(*, tenant: Tenant) -> list[DeliveryKey]:
    """The tenant's keys, newest first: the active ones (at most ten) and the revoked."""
    return list(DeliveryKey.objects.for_tenant(tenant).order_by("-id"))


@dataclass(frozen=True, slots=True)
class KeyRow:
    """An active delivery key as resolving reads it: whose it is and what checks its HMAC."""

    id: str
    salt: str
    project_id: str
    mode: str
    console: bool


@dataclass(frozen=True, slots=True)
class FileRow:
    """A file as resolving reads it, with its current object's storage key."""

    id: str
    status: str
    version: int
    filename: str
    content_type: str
    sniffed_type: str | None
    size: int
    storage_key: str


@dataclass(frozen=True, slots=True)
class VariantRow:
    """A variant as resolving reads it, with its output's storage key once it has one."""

    id: str
    status: str
    label: str
    format: str
    size: int | None
    failure_reason: str
    storage_key: str | None


@dataclass(frozen=True, slots=True)
class ResolutionRows:
    """What resolving a URL reads: the active key, the key's tenant's file (None when it has
    none of that id) and the variant of the transform's label (None when there is none, or
    when no label was asked)."""

    key: KeyRow
    file: FileRow | None
    variant: VariantRow | None


def _columns(alias: str, model: type[Model], names: tuple[str, ...]) -> str:
    columns = []
    for name in names:
        field = model._meta.get_field(name)
        assert isinstance(field, Field)
        columns.append(f'{alias}."{field.column}"')
    return ", ".join(columns)


# The columns of each row, in its dataclass's order (the storage keys aside).
_KEY_FIELDS = ("id", "salt", "project", "mode", "console")
_FILE_FIELDS = ("id", "status", "version", "filename", "content_type", "sniffed_type", "size")
_VARIANT_FIELDS = ("id", "status", "label", "format", "size", "failure_reason")
_FILE_AT = len(_KEY_FIELDS)
_VARIANT_AT = _FILE_AT + len(_FILE_FIELDS) + 1
# Every resolution runs this, so it is written once, here, and its row read into the small
# dataclasses above: compiling the ORM queries it replaces, and building model instances of
# the row, cost more than PostgreSQL's answer (bench.profile_get --endpoint resolve). The
# variant's version is the pinned one, else the file's current version.
_RESOLUTION_SQL = (
    f"SELECT {_columns('k', DeliveryKey, _KEY_FIELDS)},"
    f" {_columns('f', File, _FILE_FIELDS)}, o.storage_key,"
    f" {_columns('v', Variant, _VARIANT_FIELDS)}, vo.storage_key"
    f" FROM {DeliveryKey._meta.db_table} k"
    f" LEFT JOIN {File._meta.db_table} f"
    "  ON f.id = %s AND f.project_id = k.project_id AND f.mode = k.mode"
    f" LEFT JOIN {StoredObject._meta.db_table} o ON o.id = f.current_object_id"
    f" LEFT JOIN {Variant._meta.db_table} v"
    "  ON v.file_id = f.id AND v.version = COALESCE(%s, f.version) AND v.label = %s"
    f" LEFT JOIN {StoredObject._meta.db_table} vo ON vo.id = v.output_object_id"
    " WHERE k.id = %s AND k.revoked_at IS NULL"
)


def _read_once_more_if_closed(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The statement's one row, sent again once on a new connection when the connection it
    was sent on, opened by an earlier request, turns out closed by PostgreSQL (a restart, a
    failover, an idle timeout): a delivery server checks no connection before a request
    (settings: SERVICE_ROLE), so this, each request's first statement, finds out. Only
    outside a transaction, where a read sent again is the same read."""
    reused = connection.connection is not None
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    except (OperationalError, InterfaceError):
        if not reused or connection.in_atomic_block:
            raise
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def resolution_rows(
    *, key_id: str, file_id: str, version: int | None, label: str | None
) -> ResolutionRows | None:
    """One statement for the key (active), the file and the variant: None when the key is
    unknown or revoked. The file is the key's tenant's, whatever its status."""
    if not looks_like_id(key_id, "dk"):
        return None
    if not looks_like_id(file_id, "file"):
        file_id = ""  # no file has it: a 404 once the signature is checked
    row = _read_once_more_if_closed(_RESOLUTION_SQL, [file_id, version, label or "", key_id])
    if row is None:
        return None
    file = None if row[_FILE_AT] is None else FileRow(*row[_FILE_AT:_VARIANT_AT])
    variant = None if row[_VARIANT_AT] is None else VariantRow(*row[_VARIANT_AT:])
    return ResolutionRows(key=KeyRow(*row[:_FILE_AT]), file=file, variant=variant)


def variant_row(variant: Variant) -> VariantRow:
    """A variant read through the ORM (made on demand, or read again while waiting) as
    resolving reads one; its output object selected with it."""
    output = variant.output_object
    return VariantRow(
        id=variant.id,
        status=variant.status,
        label=variant.label,
        format=variant.format,
        size=variant.size,
        failure_reason=variant.failure_reason,
        storage_key=None if output is None else output.storage_key,
    )
