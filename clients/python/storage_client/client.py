"""The client: ``Client(api_key, base_url)`` and its resources (files, folders, uploads,
variants, webhooks)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import httpx

from storage_client import _transfer
from storage_client._http import Api, store_client
from storage_client._source import Source, SourceLike, guess_content_type
from storage_client._transfer import Destination, PartSender, Progress, plan_parts
from storage_client.delivery import DELIVERY_KEY_ENV, DeliveryKey, expiry
from storage_client.errors import (
    ConfigurationError,
    ConflictError,
    JobFailedError,
    StorageError,
    TransferError,
    VariantFailedError,
    WaitTimeoutError,
)
from storage_client.models import (
    BatchResult,
    File,
    Folder,
    Job,
    MultipartSession,
    PresignedPart,
    PresignedUpload,
    UploadPart,
    Usage,
    Variant,
)
from storage_client.upload_tokens import UploadTokens
from storage_client.webhooks import Events, Webhooks

if TYPE_CHECKING:
    from builtins import ellipsis  # the type of `...`, this client's "leave unchanged"

MIB = 1024 * 1024
API_KEY_ENV = "STORAGE_API_KEY"
BASE_URL_ENV = "STORAGE_BASE_URL"

# A multipart complete that fails with one of these has ended the session (or it was never
# open): there is nothing to resume, so the error carries no upload id.
_SESSION_ENDED = frozenset({"CONTENT_TYPE_MISMATCH", "UPLOAD_NOT_ACTIVE", "FILE_NOT_PENDING"})


class Client:
    """A client of the file storage service.

    ``api_key`` and ``base_url`` default to the environment's ``STORAGE_API_KEY`` and
    ``STORAGE_BASE_URL``. Uploads of ``multipart_threshold`` bytes or more (default 32 MiB)
    go up in parts, ``max_concurrency`` at a time (default 4), each part retried up to
    ``part_retries`` times. API requests answered 429 or 503 are retried up to
    ``max_retries`` times, after the answer's ``Retry-After`` (if it is at most
    ``max_retry_wait`` seconds). ``timeout`` applies to each network read or write.

    ``delivery_key`` (``dk_…:dsec_…``, else ``STORAGE_DELIVERY_KEY``) lets
    ``files.delivery_url`` sign delivery URLs offline, on ``delivery_base_url`` (default: the
    base URL); without one it asks the API.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        multipart_threshold: int = 32 * MIB,
        max_concurrency: int = 4,
        part_retries: int = 5,
        transport: httpx.BaseTransport | None = None,
        delivery_key: str | None = None,
        delivery_base_url: str | None = None,
    ) -> None:
        api_key = api_key or os.environ.get(API_KEY_ENV)
        delivery_key = delivery_key or os.environ.get(DELIVERY_KEY_ENV)
        base_url = base_url or os.environ.get(BASE_URL_ENV)
        if not api_key:
            raise ConfigurationError(f"no API key: pass api_key= or set {API_KEY_ENV}")
        if not base_url:
            raise ConfigurationError(f"no base URL: pass base_url= or set {BASE_URL_ENV}")
        base_url = base_url.rstrip("/")
        if base_url.endswith("/v1"):
            base_url = base_url[: -len("/v1")]
        if not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"the base URL must start with http:// or https://: {base_url}"
            )
        self.base_url = base_url
        self.delivery_key = DeliveryKey(delivery_key) if delivery_key else None
        self.delivery_base_url = (delivery_base_url or base_url).rstrip("/")
        self.multipart_threshold = multipart_threshold
        self.max_concurrency = max(1, max_concurrency)
        self.part_retries = part_retries
        self._api = Api(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            transport=transport,
        )
        self._store = store_client(timeout, connections=self.max_concurrency + 2)
        self.files = Files(self)
        self.folders = Folders(self)
        self.jobs = Jobs(self)
        self.uploads = Uploads(self)
        self.variants = Variants(self)
        self.webhooks = Webhooks(self._api)
        self.events = Events(self._api)
        self.upload_tokens = UploadTokens(self._api)

    def me(self) -> dict[str, Any]:
        """The project, organization and API key this client authenticates as."""
        body: dict[str, Any] = self._api.request("GET", "/me")["data"]
        return body

    def usage(self) -> Usage:
        """What this key's mode stores and downloaded this month, and its limits."""
        return Usage.from_json(self._api.request("GET", "/usage")["data"])

    def close(self) -> None:
        self._api.close()
        self._store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Resource:
    """A group of the API's routes, sharing the client's connections and settings."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._api = client._api


# --- Files ------------------------------------------------------------------------------------


class Files(_Resource):
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
            json=_declared(filename, content_type, size, path, metadata, expires_at),
            headers=_key_header(idempotency_key),
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
            body["expiresAt"] = None if expires_at is None else _timestamp(expires_at)
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
            headers=_key_header(idempotency_key),
            idempotent=idempotency_key is not None,
        )
        return [BatchResult.from_json(item) for item in body["data"]]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _declared(
    filename: str,
    content_type: str,
    size: int,
    path: str | None,
    metadata: dict[str, Any] | None,
    expires_at: datetime | str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"filename": filename, "contentType": content_type, "size": size}
    if path is not None:
        body["path"] = path
    if metadata is not None:
        body["metadata"] = metadata
    if expires_at is not None:
        body["expiresAt"] = _timestamp(expires_at)
    return body


def _timestamp(value: datetime | str) -> str:
    """An expiry as the API takes it: ISO 8601 UTC. A naive datetime is refused rather than
    guessed at (local time or UTC?)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("expires_at must be an aware datetime (e.g. with tzinfo=timezone.utc)")
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def _key_header(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


# --- Folders ----------------------------------------------------------------------------------


class Folders(_Resource):
    def list(self, parent: str | None = None) -> Iterator[Folder]:
        """The direct child folders of ``parent`` (default: the root), by name."""
        for item in self._api.pages("/folders", {"parent": parent}):
            yield Folder.from_json(item)

    def move(
        self,
        from_: str,
        to: str | None,
        *,
        wait: bool = False,
        timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Job:
        """Move (or rename) a folder: every file at or below ``from_`` gets the same place
        under ``to`` (``None`` or ``""``: the root). A job: with ``wait=True``, returns once
        it ended (``progress(files_done, files_total)`` as it goes; JobFailedError if it
        failed), else at once."""
        body = {"from": from_, "to": to}
        return self._start("/folders/move", body, wait, timeout, progress)

    def delete(
        self,
        path: str,
        *,
        wait: bool = False,
        timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Job:
        """Delete (soft) every file at or below ``path``: a job, as ``move``."""
        return self._start("/folders/delete", {"path": path}, wait, timeout, progress)

    def restore(
        self,
        path: str,
        *,
        wait: bool = False,
        timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Job:
        """Restore every deleted file at or below ``path``: a job, as ``move``."""
        return self._start("/folders/restore", {"path": path}, wait, timeout, progress)

    def _start(
        self,
        route: str,
        body: dict[str, Any],
        wait: bool,
        timeout: float | None,
        progress: Progress | None,
    ) -> Job:
        job = Job.from_json(self._api.request("POST", route, json=body)["data"])
        if not wait:
            return job
        return self._client.jobs.wait(job.id, timeout=timeout, progress=progress)


# --- Jobs -------------------------------------------------------------------------------------


class Jobs(_Resource):
    def get(self, job_id: str) -> Job:
        return Job.from_json(self._api.request("GET", f"/jobs/{job_id}")["data"])

    def list(self, *, page_size: int | None = None) -> Iterator[Job]:
        """Every job of the project (in this key's mode), newest first."""
        for item in self._api.pages("/jobs", {"limit": page_size}):
            yield Job.from_json(item)

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        progress: Progress | None = None,
    ) -> Job:
        """Poll until the job ends (``timeout`` seconds at most; None: no limit), calling
        ``progress(files_done, files_total)`` after each poll. Returns the job if it
        succeeded; raises JobFailedError (with ``job``) if it failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.2
        while True:
            job = self.get(job_id)
            if progress is not None:
                progress(job.files_done, job.files_total or 0)
            if job.status == "succeeded":
                return job
            if job.status == "failed":
                message = (job.error or {}).get("message", "no reason given")
                error = JobFailedError(f"job {job.id} failed: {message}", code="JOB_FAILED")
                error.job = job
                raise error
            if deadline is not None and time.monotonic() + delay > deadline:
                raise WaitTimeoutError(
                    f"job {job.id} still {job.status} after {timeout:g} s "
                    f"({job.files_done} files done)",
                    code="WAIT_TIMEOUT",
                )
            time.sleep(delay)
            delay = min(2.0, delay * 1.5)


# --- Multipart sessions -----------------------------------------------------------------------


class Uploads(_Resource):
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
            json=_declared(filename, content_type, size, path, metadata, expires_at),
            headers=_key_header(idempotency_key),
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


# --- Variants ---------------------------------------------------------------------------------


class Variants(_Resource):
    def create(
        self,
        file_id: str,
        *,
        width: int | None = None,
        height: int | None = None,
        fit: str | None = None,
        format: str | None = None,
        quality: int | None = None,
        wait: bool = False,
        timeout: float = 60,
    ) -> Variant:
        """Ask for a resized copy (made by a worker). With ``wait=True``, wait until it is
        ``ready`` (``VariantFailedError`` if it fails, ``WaitTimeoutError`` after
        ``timeout`` seconds)."""
        params = {"width": width, "height": height, "fit": fit, "format": format}
        params["quality"] = quality
        body = {k: v for k, v in params.items() if v is not None}
        variant = Variant.from_json(
            self._api.request("POST", f"/files/{file_id}/transform", json=body)["data"]
        )
        if not wait:
            return variant
        return self.wait(file_id, variant.id, timeout=timeout)

    def wait(self, file_id: str, variant_id: str, *, timeout: float = 60) -> Variant:
        """Poll until the variant is ``ready``."""
        deadline = time.monotonic() + timeout
        delay = 0.2
        while True:
            variant = next((v for v in self.list(file_id) if v.id == variant_id), None)
            if variant is None:
                raise StorageError(f"variant {variant_id} is not among file {file_id}'s")
            if variant.status == "ready":
                return variant
            if variant.status == "failed":
                error = VariantFailedError(
                    f"variant {variant.label} failed: {variant.failure_reason or 'no reason'}",
                    code="VARIANT_FAILED",
                )
                error.variant = variant
                raise error
            if time.monotonic() + delay > deadline:
                raise WaitTimeoutError(
                    f"variant {variant.label} still {variant.status} after {timeout:g} s",
                    code="WAIT_TIMEOUT",
                )
            time.sleep(delay)
            delay = min(2.0, delay * 1.5)

    def list(self, file_id: str) -> Iterator[Variant]:
        """Every variant of every version of the file, oldest first."""
        for item in self._api.pages(f"/files/{file_id}/variants"):
            yield Variant.from_json(item)

    def download(
        self,
        file_id: str,
        variant_id: str,
        destination: Destination,
        *,
        progress: Progress | None = None,
    ) -> int:
        """Stream a ``ready`` variant's bytes to a path or a binary file object."""
        url = self._api.request(
            "POST", f"/files/{file_id}/variants/{variant_id}/download-url", json={}
        )["url"]
        return _transfer.download(
            self._client._store,
            str(url),
            destination,
            retries=self._client.part_retries,
            progress=progress,
        )


__all__ = ["Client", "Files", "Folders", "Uploads", "Variants"]
