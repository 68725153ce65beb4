"""``client.files``: upload, list, change, download and delete files."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from storage_client import _transfer
from storage_client._resource import Resource, declared_upload, idempotency_header, timestamp
from storage_client._source import Source, SourceLike, guess_content_type
from storage_client._transfer import Destination, Progress
from storage_client.delivery import expiry
from storage_client.errors import ConflictError
from storage_client.models import BatchResult, File, PresignedUpload

if TYPE_CHECKING:
    from builtins import ellipsis  # the type of `...`, this client's "leave unchanged"


class Files(Resource):
    def upload(
        self,
        source: SourceLike,
        *,
        filename: str | None = None,
        path: str | None = None,
        metadata: dict[str, Any] | None = None,
        content_type: str | None = None,
        progress: Progress | None = None,
        idempotency_key: str | None = None,
        expires_at: datetime | str | None = None,
    ) -> File:
        """Upload a path or a binary file object; returns the file, already ``uploaded``.
        With ``expires_at`` (an aware datetime, or an ISO 8601 UTC string) the file deletes
        itself then.

        Below the client's ``multipart_threshold`` the bytes go up in one PUT, otherwise in
        parallel parts. The upload's creation carries an ``Idempotency-Key`` (a new random
        one unless given), so retrying it never makes two files. If a multipart upload is
        interrupted, the exception's ``upload_id`` names its session, left active for
        ``client.uploads.resume``.
        """
        with Source(source) as src:
            name = filename or src.name
            if not name:
                raise ValueError("filename= is needed for a file object without a name")
            declared: dict[str, Any] = {
                "filename": name,
                "content_type": content_type or guess_content_type(name),
                "size": src.size,
                "path": path,
                "metadata": metadata,
                "idempotency_key": idempotency_key or f"sdk-{uuid.uuid4().hex}",
                "expires_at": expires_at,
            }
            if src.size < self._client.multipart_threshold:
                file, target = self.start_upload(**declared)
                if file.status != "pending":  # a key used again after success
                    return self.get(file.id)
                _transfer.put_single(
                    self._client._store,
                    target.raw,
                    src,
                    retries=self._client.part_retries,
                    progress=progress,
                )
                return self.complete(file.id)
            file, session = self._client.uploads.create(**declared)
            if session.status == "completed":  # a key used again after success
                return file
            return self._client.uploads._transfer(session.id, src, session, progress)

    def start_upload(
        self,
        *,
        filename: str,
        content_type: str,
        size: int,
        path: str | None = None,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        expires_at: datetime | str | None = None,
    ) -> tuple[File, PresignedUpload]:
        """Step 1 of a single upload whose bytes come from elsewhere (a browser): a pending
        file and where to PUT its bytes. Then ``complete(file.id)``."""
        started = self._api.request(
            "POST",
            "/files/upload",
            json=declared_upload(filename, content_type, size, path, metadata, expires_at),
            headers=idempotency_header(idempotency_key),
            idempotent=idempotency_key is not None,
        )
        return File.from_json(started["file"]), PresignedUpload.from_json(started["upload"])

    def complete(self, file_id: str) -> File:
        """Step 2 of a single upload: the service checks the stored bytes' real size and type
        and the file becomes ``uploaded``."""
        self._finish(f"/files/{file_id}/complete", file_id)
        return self.get(file_id)

    def _finish(self, path: str, file_id: str) -> Any:
        """POST a complete; if the answer was lost and the retry finds it already done
        (409), the file as it is tells whether the first one succeeded."""
        try:
            return self._api.request("POST", path, idempotent=True)
        except ConflictError as exc:
            if exc.code not in ("FILE_NOT_PENDING", "NO_REPLACE_IN_PROGRESS", "UPLOAD_NOT_ACTIVE"):
                raise
            current = self.get(file_id)
            if current.status != "uploaded":
                raise
            return current.raw

    def get(self, file_id: str) -> File:
        return File.from_json(self._api.request("GET", f"/files/{file_id}")["data"])

    def list(
        self,
        *,
        path: str | None = None,
        status: str | None = None,
        search: str | None = None,
        content_type: str | None = None,
        sort_by: str | None = None,
        order: str | None = None,
        page_size: int | None = None,
        metadata: Mapping[str, str | int | float | bool] | None = None,
        recursive: bool = False,
    ) -> Iterator[File]:
        """Every matching file, page after page (fetched as the iteration goes).

        ``path`` is an exact folder (``"/"`` for the root), or with ``recursive=True`` the
        folder and every folder below it; deleted files appear only with
        ``status="deleted"``. ``metadata`` keeps files whose metadata has each key with that
        value (up to 10, all must match; ``{"year": 2026}`` matches 2026 and "2026").
        ``sort_by`` is ``createdAt``, ``updatedAt``, ``filename`` or ``size`` (or their
        snake_case names).
        """
        params: dict[str, Any] = {
            "path": path,
            "status": status,
            "search": search,
            "contentType": content_type,
            "sortBy": _camel(sort_by) if sort_by else None,
            "order": order,
            "limit": page_size,
            "recursive": "true" if recursive else None,
            **_metadata_filters(metadata or {}),
        }
        for item in self._api.pages("/files", params):
            yield File.from_json(item)

    def update(
        self,
        file_id: str,
        *,
        filename: str | ellipsis = ...,
        path: str | ellipsis | None = ...,
        metadata: dict[str, Any] | ellipsis | None = ...,
        expires_at: datetime | str | ellipsis | None = ...,
    ) -> File:
        """Rename, move (``path=None`` is the root), replace the metadata (``None`` clears
        it) or set the expiry (``None``: never). Arguments left out are unchanged."""
        body: dict[str, Any] = {}
        if filename is not ...:
            body["filename"] = filename
        if path is not ...:
            body["path"] = path
        if metadata is not ...:
            body["metadata"] = metadata
        if expires_at is not ...:
            body["expiresAt"] = None if expires_at is None else timestamp(expires_at)
        if not body:
            raise ValueError("give at least one of filename, path, metadata, expires_at")
        return File.from_json(self._api.request("PATCH", f"/files/{file_id}", json=body))

    def copy(self, file_id: str, *, filename: str | None = None, path: str | None = None) -> File:
        """A new file sharing the same bytes. ``path=None`` keeps the source's folder (``""``
        is the root); ``filename=None`` keeps its name."""
        body: dict[str, Any] = {}
        if filename is not None:
            body["filename"] = filename
        if path is not None:
            body["path"] = path
        return File.from_json(self._api.request("POST", f"/files/{file_id}/copy", json=body))

    def replace(
        self,
        file_id: str,
        source: SourceLike,
        *,
        content_type: str | None = None,
        progress: Progress | None = None,
    ) -> File:
        """New content for the same file id: version + 1 (the previous version is kept)."""
        with Source(source) as src:
            if content_type is None:
                content_type = (
                    guess_content_type(src.name) if src.name else self.get(file_id).content_type
                )
            started = self._api.request(
                "POST",
                f"/files/{file_id}/replace",
                json={"contentType": content_type, "size": src.size},
            )
            _transfer.put_single(
                self._client._store,
                started["upload"],
                src,
                retries=self._client.part_retries,
                progress=progress,
            )
        done = self._finish(f"/files/{file_id}/replace/complete", file_id)
        return File.from_json(done)

    def download(
        self, file_id: str, destination: Destination, *, progress: Progress | None = None
    ) -> int:
        """Stream the file's bytes to a path (replaced only once complete) or a binary file
        object. Returns the number of bytes."""
        return _transfer.download(
            self._client._store,
            self.download_url(file_id),
            destination,
            retries=self._client.part_retries,
            progress=progress,
        )

    def download_url(self, file_id: str, *, expires_in: int | None = None) -> str:
        """A presigned GET URL (valid ``expires_in`` seconds, 60 to 86400; default 3600)."""
        body = {"expiresInSeconds": expires_in} if expires_in is not None else {}
        return str(self._api.request("POST", f"/files/{file_id}/download-url", json=body)["url"])

    def delivery_url(
        self,
        file_id: str,
        *,
        width: int | None = None,
        height: int | None = None,
        fit: str | None = None,
        format: str | None = None,
        quality: int | None = None,
        version: int | None = None,
        expires_in_seconds: int | None = None,
    ) -> str:
        """A delivery URL (for ``<img src>`` and links; cacheable): of the file's current
        version, or of ``version``, or of the transform (``format="auto"`` follows the
        browser's Accept). Never expires unless ``expires_in_seconds`` (60 to 31536000) is
        given. Signed offline with the client's delivery key, else by the API."""
        transform = {
            "width": width,
            "height": height,
            "fit": fit,
            "format": format,
            "quality": quality,
        }
        given = {name: value for name, value in transform.items() if value is not None}
        key = self._client.delivery_key
        if key is not None:
            path = key.path(file_id, **given, version=version, expires=expiry(expires_in_seconds))
            return self._client.delivery_base_url + path
        body: dict[str, Any] = {"expiresInSeconds": expires_in_seconds}
        if given:
            body["transform"] = given
        if version is not None:
            body["version"] = version
        answer = self._api.request("POST", f"/files/{file_id}/delivery-url", json=body)
        return str(answer["url"])

    def delete(self, file_id: str) -> None:
        """Soft delete: restorable until the purge (7 days by default)."""
        self._api.request("DELETE", f"/files/{file_id}")

    def restore(self, file_id: str) -> File:
        return File.from_json(self._api.request("POST", f"/files/{file_id}/restore"))

    def batch(
        self, operations: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> Sequence[BatchResult]:
        """Up to 100 operations in one request, each answered as its single endpoint:
        ``{"op": "update", "id", "filename"?, "path"?, "metadata"?}``, ``{"op": "delete",
        "id"}``, ``{"op": "restore", "id"}``, ``{"op": "copy", "id", "path"?,
        "filename"?}``. One refused operation does not stop the others: check each
        result's ``ok``. A malformed batch raises ValidationError with nothing done. With
        ``idempotency_key`` the request is retried safely (the answer is replayed)."""
        body = self._api.request(
            "POST",
            "/files/batch",
            json={"operations": [dict(operation) for operation in operations]},
            headers=idempotency_header(idempotency_key),
            idempotent=idempotency_key is not None,
        )
        return [BatchResult.from_json(item) for item in body["data"]]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _metadata_filters(metadata: Mapping[str, str | int | float | bool]) -> dict[str, str]:
    """``metadata[key]=value`` query parameters: a string as is, a number or boolean as its
    JSON text (``True`` is ``true``), which matches the stored number or boolean too."""
    params: dict[str, str] = {}
    for key, value in metadata.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = json.dumps(value)
        elif isinstance(value, str):
            text = value
        else:
            raise TypeError(f"metadata[{key!r}] must be a string, number or boolean")
        params[f"metadata[{key}]"] = text
    return params
