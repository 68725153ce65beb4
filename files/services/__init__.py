"""Every state change of a file: one function per transition, each in one transaction."""

from files.services.batch import BatchAnswer, Operation, Outcome, files_batch
from files.services.changes import file_copy, file_download_url, file_update
from files.services.common import StartedUpload
from files.services.folders import folder_delete, folder_move, folder_restore
from files.services.lifecycle import file_delete, file_restore
from files.services.replace import file_replace_complete, file_replace_start
from files.services.sweeps import (
    PurgeReport,
    files_expire_due,
    files_expire_pending,
    files_purge_expired,
    objects_remove_discarded,
)
from files.services.upload import file_complete, file_upload_start

__all__ = [
    "BatchAnswer",
    "Operation",
    "Outcome",
    "PurgeReport",
    "StartedUpload",
    "file_complete",
    "file_copy",
    "file_delete",
    "file_download_url",
    "file_replace_complete",
    "file_replace_start",
    "file_restore",
    "file_update",
    "file_upload_start",
    "files_batch",
    "files_expire_due",
    "files_expire_pending",
    "files_purge_expired",
    "folder_delete",
    "folder_move",
    "folder_restore",
    "objects_remove_discarded",
]
