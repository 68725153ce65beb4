"""The file id in the OpenAPI document: the path parameter every operation on one file takes,
the shared parts of those operations' entries, the links from an answer that carries a file
id to them, and the codes every start and every complete of an upload may answer. Here, not
in views, because the uploads and variants apps describe their operations with them too (an
app never imports another app's views)."""

from __future__ import annotations

from accounts.scopes import scope
from storage_service.openapi import each, path_id
from storage_service.operations import ResourceSchema

FILE_ID = path_id("file_id", "file")
FILES = ResourceSchema(
    tag="files",
    read=scope("files:read"),
    write=scope("files:write"),
    id_parameter=FILE_ID,
    not_found="FILE_NOT_FOUND",
)
# What starting an upload refuses, a single PUT's or a multipart one's.
START_ERRORS = (
    "FILE_TOO_LARGE",
    "QUOTA_EXCEEDED",
    "CONTENT_TYPE_NOT_ALLOWED",
    "IDEMPOTENCY_KEY_REUSED",
    "STORAGE_UNAVAILABLE",
    # What an upload token's bounds refuse (files/services/grants.py).
    "PATH_NOT_ALLOWED",
    "UPLOAD_TOKEN_EXHAUSTED",
    "ORIGIN_NOT_ALLOWED",
)
# What the check of the stored bytes refuses when an upload (or a replacement) completes.
VERIFY_ERRORS = (
    "UPLOAD_SIZE_MISMATCH",
    "CONTENT_TYPE_MISMATCH",
    "CONTENT_TYPE_NOT_ALLOWED",
    "STORAGE_UNAVAILABLE",
)
FILE_ID_PARAMETERS = (
    "files_retrieve",
    "files_partial_update",
    "files_destroy",
    "files_complete",
    "files_copy",
    "files_download_url",
    "files_replace",
    "files_replace_complete",
    "files_restore",
    "variants_transform",
    "variants_list",
)


def file_links(expression: str) -> dict[str, dict[str, str]]:
    """Links to every operation on one file, its id at ``expression``."""
    return each(FILE_ID_PARAMETERS, file_id=expression)
