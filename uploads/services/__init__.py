"""Every state change of a multipart upload session, each in one transaction
(uploads/services/sessions.py states the lock order they share)."""

from uploads.services.complete import upload_complete
from uploads.services.expiry import upload_abort, uploads_expire
from uploads.services.parts import upload_parts_held, upload_sign_parts
from uploads.services.sessions import PresignedParts, multipart_complete_refusal
from uploads.services.start import StartedMultipart, upload_start

__all__ = [
    "PresignedParts",
    "StartedMultipart",
    "multipart_complete_refusal",
    "upload_abort",
    "upload_complete",
    "upload_parts_held",
    "upload_sign_parts",
    "upload_start",
    "uploads_expire",
]
