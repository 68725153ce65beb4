"""Fresh part URLs of an active session, and the parts the store holds."""

from __future__ import annotations

from accounts.tenancy import Tenant
from storage_service import objectstore
from storage_service.errors import UploadNotActive, ValidationError
from uploads.selectors import upload_get
from uploads.services.sessions import PresignedParts, check_open, plan_of, presign_parts


def upload_sign_parts(*, tenant: Tenant, upload_id: str, part_numbers: list[int]) -> PresignedParts:
    """Fresh presigned URLs for the given parts of an active session."""
    session = upload_get(tenant=tenant, upload_id=upload_id)
    check_open(session)
    beyond = sorted(n for n in part_numbers if n > session.part_count)
    if beyond:
        raise ValidationError(
            f"This upload has parts 1 to {session.part_count}.",
            details={"partNumbers": [f"No part {n}." for n in beyond[:20]]},
        )
    return presign_parts(session, part_numbers)


def parts_by_number(held: list[objectstore.HeldPart]) -> dict[int, list[objectstore.HeldPart]]:
    versions: dict[int, list[objectstore.HeldPart]] = {}
    for part in held:
        versions.setdefault(part.number, []).append(part)
    return versions


def _best_version(versions: list[objectstore.HeldPart], length: int) -> objectstore.HeldPart:
    """The version of a part to show when the store holds several (SeaweedFS keeps every
    upload of a part number): one of the right length if any, else the latest."""

    def rank(part: objectstore.HeldPart) -> tuple[bool, float]:
        modified = part.last_modified.timestamp() if part.last_modified else 0.0
        return (part.size == length, modified)

    return max(versions, key=rank)


def upload_parts_held(*, tenant: Tenant, upload_id: str) -> list[objectstore.HeldPart]:
    """The parts the store holds for an active session, every page of them, one per part
    number, in part order."""
    session = upload_get(tenant=tenant, upload_id=upload_id)
    check_open(session)
    held = objectstore.multipart_parts(
        key=session.stored_object.storage_key, upload_id=session.provider_upload_id
    )
    if held is None:
        raise UploadNotActive("The store no longer holds this upload; start a new one.")
    plan = plan_of(session)
    return [
        _best_version(versions, plan.part_length(number))
        for number, versions in sorted(parts_by_number(held).items())
    ]
