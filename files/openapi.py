"""The file id in the OpenAPI document: the path parameter every operation on one file takes,
and the links from an answer that carries a file id to those operations. Here, not in views,
because the uploads and variants apps describe their operations with them too (an app never
imports another app's views)."""

from __future__ import annotations

from storage_service.openapi import each, path_id

FILE_ID = path_id("file_id", "file")
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
