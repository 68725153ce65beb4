"""What the files app announces to the apps built on it (uploads, variants).

files imports neither of them: they register their receivers in their ``AppConfig.ready``
(see storage_service/hooks.py). Each hook is sent inside the transaction of the change it
announces, with the file row locked, so a receiver's writes commit or vanish with it.
"""

from __future__ import annotations

from files.models import File, StoredObject
from storage_service.errors import ApiError
from storage_service.hooks import hook


@hook
def version_published(*, file: File, stored: StoredObject, version: int) -> None:
    """Verified bytes became version ``version`` of ``file`` (a single upload's complete, a
    multipart complete, a replacement's complete). ``stored.sniffed_type`` is the type the
    bytes really are. variants makes the thumbnail of an eligible image."""


@hook
def file_purged(*, file: File) -> None:
    """``file`` is purged: the objects its versions used are discarded when no other file
    needs them. A receiver discards the objects it keeps for this file alone (variants:
    every variant's result)."""


@hook
def single_complete_refusal(*, file: File) -> ApiError | None:
    """Before a pending file is completed as a single PUT: an app that owns this file's
    upload returns the error that refuses it (uploads: a multipart file completes through
    its session), else None."""


@hook
def upload_token_types(*, token_id: str) -> list[str] | None:
    """The content types the upload token ``token_id`` (which started a file) allows, exact
    or ``type/*``; None: any. files checks a completing file's real type against them
    (uploads owns the tokens)."""
