"""``client.uploads``: multipart sessions, sending their parts in parallel and resuming an
interrupted one."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from storage_client import _transfer
from storage_client._resource import Resource, declared_upload, idempotency_header
from storage_client._source import Source, SourceLike
from storage_client._transfer import PartSender, Progress, plan_parts
from storage_client.errors import ConflictError, StorageError, TransferError
from storage_client.models import File, MultipartSession, PresignedPart, UploadPart

# A multipart complete that fails with one of these has ended the session (or it was never
# open): there is nothing to resume, so the error carries no upload id.
_SESSION_ENDED = frozenset({"CONTENT_TYPE_MISMATCH", "UPLOAD_NOT_ACTIVE", "FILE_NOT_PENDING"})


class Uploads(Resource):
    """Multipart sessions: ``resume`` for interrupted uploads, and the steps one by one for
    bytes that do not pass through this process (a browser's)."""

    def resume(
        self, upload_id: str, source: SourceLike, *, progress: Progress | None = None
    ) -> File:
        """Finish an interrupted multipart upload from the same source (a file object is
        read from its current position, as by ``upload``).

        Lists the parts the store holds, keeps those whose length and checksum match the
        source, sends the others, and completes.
        """
        with Source(source) as src:
            return self._transfer(upload_id, src, None, progress)

    def create(
        self,
        *,
        filename: str,
        content_type: str,
        size: int,
        path: str | None = None,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        expires_at: datetime | str | None = None,
    ) -> tuple[File, MultipartSession]:
        """Start a session: a pending file, and a presigned PUT URL for every part."""
        data = self._api.request(
            "POST",
            "/uploads/multipart",
            json=declared_upload(filename, content_type, size, path, metadata, expires_at),
            headers=idempotency_header(idempotency_key),
            idempotent=idempotency_key is not None,
        )["data"]
        return File.from_json(data["file"]), MultipartSession.from_json(data["upload"])

    def sign_parts(self, upload_id: str, part_numbers: list[int]) -> list[PresignedPart]:
        """Fresh presigned URLs for some parts (the URLs live 15 minutes)."""
        signed = _transfer.sign_parts(self._api, upload_id, list(part_numbers))
        return [PresignedPart.from_json(part) for part in signed]

    def parts(self, upload_id: str) -> list[UploadPart]:
        """The parts the store holds for an active session, in part order."""
        body = self._api.request("GET", f"/uploads/multipart/{upload_id}/parts")
        return [UploadPart.from_json(part) for part in body["data"]["parts"]]

    def complete(
        self, upload_id: str, etags: Mapping[int, str], *, file_id: str | None = None
    ) -> File:
        """Assemble the parts (``{part number: ETag}``, every part once); the service checks
        the object and the file becomes ``uploaded``. With ``file_id``, a retry whose first
        attempt succeeded (its answer lost) answers that file instead of 409."""
        body = {"parts": [{"partNumber": n, "etag": etags[n]} for n in sorted(etags)]}
        path = f"/uploads/multipart/{upload_id}/complete"
        try:
            return File.from_json(self._api.request("POST", path, json=body, idempotent=True))
        except ConflictError as exc:
            if exc.code != "UPLOAD_NOT_ACTIVE" or file_id is None:
                raise
            current = self._client.files.get(file_id)
            if current.status != "uploaded":
                raise
            return current

    def abort(self, upload_id: str) -> None:
        """Abort a session (the store drops its parts; the file becomes ``failed``)."""
        self._api.request("DELETE", f"/uploads/multipart/{upload_id}")

    def _held(self, upload_id: str, src: Source, plan: _transfer.PartPlan) -> dict[int, str]:
        """The held parts that match the source: number -> etag."""
        good: dict[int, str] = {}
        for part in self.parts(upload_id):
            number, etag = part.part_number, part.etag
            if number > plan.part_count or part.size != plan.length(number):
                continue  # sent again below
            if _is_md5(etag) and src.md5(plan.offset(number), plan.length(number)) != etag:
                continue  # other bytes than the source's: sent again below
            good[number] = etag
        return good

    def _transfer(
        self,
        upload_id: str,
        src: Source,
        session: MultipartSession | None,
        progress: Progress | None,
    ) -> File:
        """Send the parts (all of a new session's, or a resumed one's missing), complete.

        Whatever interrupts it leaves the session active and carries ``upload_id``.
        """
        try:
            if session is not None:
                plan = _transfer.PartPlan(session.size, session.part_size, session.part_count)
                held: dict[int, str] = {}
            else:
                plan = plan_parts(src.size)
                held = self._held(upload_id, src, plan)
            sender = PartSender(
                api=self._api,
                store=self._client._store,
                upload_id=upload_id,
                source=src,
                plan=plan,
                concurrency=self._client.max_concurrency,
                retries=self._client.part_retries,
                progress=progress,
                already_sent=sum(plan.length(n) for n in held),
            )
            missing = [n for n in range(1, plan.part_count + 1) if n not in held]
            if session is not None:
                sender.add_urls(session.raw["parts"])
            elif missing:
                try:
                    sender.refresh(missing[:1])
                except StorageError as exc:
                    if exc.code == "VALIDATION_ERROR":
                        raise TransferError(
                            f"the source ({src.size} bytes) does not match upload {upload_id}"
                        ) from exc
                    raise
            etags = {**held, **sender.send(missing)}
            file_id = session.file_id if session is not None else None
            return self.complete(upload_id, etags, file_id=file_id)
        except StorageError as exc:
            if exc.code not in _SESSION_ENDED:
                exc.upload_id = upload_id
            if session is None and isinstance(exc, TransferError) and exc.status == 403:
                # Each part URL signs the part's exact length: another source's parts differ.
                exc.message += " (is the source the interrupted upload's, from the same position?)"
                exc.args = (exc.message,)
            raise
        except BaseException as exc:
            # KeyboardInterrupt and anything else: the session stays active to resume.
            exc.upload_id = upload_id  # type: ignore[attr-defined]
            raise


def _is_md5(etag: str) -> bool:
    return len(etag) == 32 and all(c in "0123456789abcdef" for c in etag.lower())
