"""Read queries of the delivery app."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections

from accounts.models import Project
from accounts.tenancy import Tenant
from delivery.models import DeliveryKey
from files.models import File, StoredObject
from storage_service.errors import DeliveryKeyNotFound
from storage_service.ids import looks_like_id
from storage_service.raw_select import SelectList
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


@dataclass(frozen=True)
class ResolutionRows:
    """What resolving a URL reads: the active key with its project, the key's tenant's file
    (None when it has none of that id) with its current object, and the variant of the
    transform's label (None when there is none, or when no label was asked)."""

    key: DeliveryKey
    file: File | None
    variant: Variant | None


_DKEY = SelectList(DeliveryKey, "k")
_PROJECT = SelectList(Project, "p")
_FILE = SelectList(File, "f")
_CURRENT = SelectList(StoredObject, "o")
_VARIANT = SelectList(Variant, "v")
_OUTPUT = SelectList(StoredObject, "vo")
# Every resolution runs this, so it is written once, here: compiling the three ORM queries it
# replaces cost more than PostgreSQL's answer (bench.profile_get --endpoint resolve). The
# variant's version is the pinned one, else the file's current version.
_RESOLUTION_SQL = (
    f"SELECT {_DKEY.sql}, {_PROJECT.sql}, {_FILE.sql}, {_CURRENT.sql}, {_VARIANT.sql},"
    f" {_OUTPUT.sql}"
    f" FROM {DeliveryKey._meta.db_table} k"
    f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
    f" LEFT JOIN {File._meta.db_table} f"
    "  ON f.id = %s AND f.project_id = k.project_id AND f.mode = k.mode"
    f" LEFT JOIN {StoredObject._meta.db_table} o ON o.id = f.current_object_id"
    f" LEFT JOIN {Variant._meta.db_table} v"
    "  ON v.file_id = f.id AND v.version = COALESCE(%s, f.version) AND v.label = %s"
    f" LEFT JOIN {StoredObject._meta.db_table} vo ON vo.id = v.output_object_id"
    " WHERE k.id = %s AND k.revoked_at IS NULL"
)
_PROJECT_AT = _DKEY.width
_FILE_AT = _PROJECT_AT + _PROJECT.width
_CURRENT_AT = _FILE_AT + _FILE.width
_VARIANT_AT = _CURRENT_AT + _CURRENT.width
_OUTPUT_AT = _VARIANT_AT + _VARIANT.width


def resolution_rows(
    *, key_id: str, file_id: str, version: int | None, label: str | None
) -> ResolutionRows | None:
    """One statement for the key (active), its project, the file and the variant: None when
    the key is unknown or revoked. The file is the key's tenant's, whatever its status."""
    if not looks_like_id(key_id, "dk"):
        return None
    if not looks_like_id(file_id, "file"):
        file_id = ""  # no file has it: a 404 once the signature is checked
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_RESOLUTION_SQL, [file_id, version, label or "", key_id])
        row = cursor.fetchone()
    if row is None:
        return None
    key = _DKEY.instance(row[:_PROJECT_AT], connection)
    key.project = _PROJECT.instance(row[_PROJECT_AT:_FILE_AT], connection)
    file = None
    if row[_FILE_AT] is not None:
        file = _FILE.instance(row[_FILE_AT:_CURRENT_AT], connection)
        file.project = key.project
        file.current_object = _CURRENT.instance(row[_CURRENT_AT:_VARIANT_AT], connection)
    variant = None
    if row[_VARIANT_AT] is not None:
        variant = _VARIANT.instance(row[_VARIANT_AT:_OUTPUT_AT], connection)
        if row[_OUTPUT_AT] is not None:
            variant.output_object = _OUTPUT.instance(row[_OUTPUT_AT:], connection)
    return ResolutionRows(key=key, file=file, variant=variant)
