"""Moving bytes between the source and the store through presigned URLs.

- ``PartSender`` PUTs the parts of a multipart session from worker threads, each part
  streamed from the source in chunks (memory: about ``concurrency x CHUNK``), retried with
  backoff, its URL refreshed through the API when it is about to expire or the store says it
  has. Progress is reported, and interruptions (an error, ``KeyboardInterrupt``, a progress
  callback that raises) are handled, in the calling thread.
- ``put_single`` PUTs a whole file to a single-upload URL.
- ``download`` GETs a presigned URL into a path or a file object, resuming with ``Range``
  after a broken connection.
"""

from __future__ import annotations

import collections
import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Union

import httpx

from storage_client._http import Api, backoff, describe, retry_after, split_etag
from storage_client._source import Source
from storage_client.errors import StorageError, TransferError
from storage_client.models import parse_datetime

Progress = Callable[[int, int], None]
Destination = Union[str, "os.PathLike[str]", IO[bytes]]

MIB = 1024 * 1024
# The service's part-size rule (its README, "Part size"), needed to resume an upload whose
# session answer is gone: at least 8 MiB, whole MiB, at most 10,000 parts.
MIN_PART_SIZE = 8 * MIB
MAX_PARTS = 10_000
# A part URL this close to its expiry is refreshed before use, not after a refusal.
REFRESH_MARGIN_SECONDS = 30.0
# Store answers worth another attempt (S3's SlowDown is a 503).
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
CHUNK_READ = 1024 * 1024
# How long an interrupted transfer waits for its threads to stop sending.
STOP_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class PartPlan:
    size: int
    part_size: int
    part_count: int

    def offset(self, number: int) -> int:
        return (number - 1) * self.part_size

    def length(self, number: int) -> int:
        """Part ``number``'s exact length: part_size, or the remainder for the last."""
        if number < self.part_count:
            return self.part_size
        return self.size - (self.part_count - 1) * self.part_size


def plan_parts(size: int) -> PartPlan:
    per_part = -(-size // MAX_PARTS)
    part_size = max(MIN_PART_SIZE, -(-per_part // MIB) * MIB)
    return PartPlan(size=size, part_size=part_size, part_count=max(1, -(-size // part_size)))


class _Stopped(Exception):
    """Raised inside a worker when the transfer was interrupted elsewhere."""


class _Meter:
    """Bytes sent so far, from every thread (a retried part's bytes are taken back)."""

    def __init__(self, done: int = 0) -> None:
        self._lock = threading.Lock()
        self.done = done

    def add(self, count: int) -> None:
        with self._lock:
            self.done += count


class _Body:
    """A range of the source as httpx sends it, counting what went out (so a retried
    part's bytes can be taken back from the progress)."""

    def __init__(
        self,
        source: Source,
        offset: int,
        length: int,
        *,
        stop: threading.Event,
        meter: _Meter | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.source, self.offset, self.length = source, offset, length
        self.stop, self.meter, self.progress = stop, meter, progress
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.source.chunks(self.offset, self.length):
            if self.stop.is_set():
                raise _Stopped
            yield chunk
            self.sent += len(chunk)
            if self.meter is not None:
                self.meter.add(len(chunk))
            if self.progress is not None:
                self.progress(self.sent, self.length)


def _refusal(what: str, response: httpx.Response) -> TransferError:
    body = response.text[:300].replace("\n", " ") if response.content else ""
    return TransferError(
        f"the store refused {what}: HTTP {response.status_code} {body}".rstrip(),
        status=response.status_code,
    )


def sign_parts(api: Api, upload_id: str, numbers: list[int]) -> list[dict[str, Any]]:
    """Fresh presigned URLs for some parts: ``[{partNumber, url, expiresAt}]``."""
    body = api.request(
        "POST",
        f"/uploads/multipart/{upload_id}/parts",
        json={"partNumbers": numbers},
        idempotent=True,  # it only signs URLs
    )
    parts: list[dict[str, Any]] = body["data"]["parts"]
    return parts


class PartSender:
    """Sends the parts of one multipart session, ``concurrency`` at a time."""

    def __init__(
        self,
        *,
        api: Api,
        store: httpx.Client,
        upload_id: str,
        source: Source,
        plan: PartPlan,
        concurrency: int,
        retries: int,
        progress: Progress | None,
        already_sent: int = 0,
    ) -> None:
        self.api = api
        self.store = store
        self.upload_id = upload_id
        self.source = source
        self.plan = plan
        self.concurrency = max(1, concurrency)
        self.retries = retries
        self.progress = progress
        self.meter = _Meter(already_sent)
        self._lock = threading.Lock()
        self._urls: dict[int, tuple[str, float]] = {}
        self._queue: collections.deque[int] = collections.deque()
        self._stop = threading.Event()

    # --- URLs ---------------------------------------------------------------------------------

    def add_urls(self, parts: Iterable[dict[str, Any]]) -> None:
        """Remember presigned part URLs (``[{partNumber, url, expiresAt}]``)."""
        with self._lock:
            for part in parts:
                expires = parse_datetime(str(part["expiresAt"])).timestamp()
                self._urls[int(part["partNumber"])] = (str(part["url"]), expires)

    def refresh(self, numbers: list[int]) -> None:
        """Fresh URLs for ``numbers``, and for the queued parts whose URLs are about to
        expire too (one call, not one per part)."""
        soon = time.time() + REFRESH_MARGIN_SECONDS
        with self._lock:
            stale = [n for n in self._queue if self._urls.get(n, ("", 0.0))[1] <= soon]
        wanted = sorted(set(numbers) | set(stale[: 1000 - len(numbers)]))
        self.add_urls(sign_parts(self.api, self.upload_id, wanted))

    def _url(self, number: int) -> str:
        with self._lock:
            url, expires = self._urls.get(number, ("", 0.0))
        if expires - time.time() <= REFRESH_MARGIN_SECONDS:
            self.refresh([number])
            with self._lock:
                url, _ = self._urls[number]
        return url

    # --- One part -----------------------------------------------------------------------------

    def _pause(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise _Stopped

    def _send_part(self, number: int) -> str:
        """PUT one part until the store takes it; its ETag."""
        offset, length = self.plan.offset(number), self.plan.length(number)
        attempt, refreshed = 0, False
        while True:
            url = self._url(number)
            body = _Body(self.source, offset, length, stop=self._stop, meter=self.meter)
            try:
                response = self.store.put(
                    url, content=body, headers={"Content-Length": str(length)}
                )
            except httpx.TransportError as exc:
                self.meter.add(-body.sent)
                if attempt >= self.retries:
                    raise TransferError(
                        f"part {number}: {describe(exc)} (after {attempt + 1} attempts)"
                    ) from exc
                self._pause(backoff(attempt))
                attempt += 1
                continue
            if response.is_success:
                etag = response.headers.get("ETag")
                if not etag:
                    raise TransferError(f"the store answered part {number} without an ETag")
                return split_etag(etag)
            self.meter.add(-body.sent)
            if response.status_code == 403 and not refreshed:
                # Most likely expired (a slow start, or a clock out of step with the
                # service's): sign it again once. A second 403 is a real refusal.
                refreshed = True
                self.refresh([number])
                continue
            if response.status_code in RETRYABLE and attempt < self.retries:
                wait = retry_after(response)
                self._pause(min(30.0, backoff(attempt) if wait is None else wait))
                attempt += 1
                continue
            raise _refusal(f"part {number}", response)

    # --- Every part ---------------------------------------------------------------------------

    def _work(self, results: dict[int, str], errors: list[BaseException]) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._queue:
                    return
                number = self._queue.popleft()
            try:
                etag = self._send_part(number)
            except _Stopped:
                return
            except StorageError as exc:
                errors.append(exc)
                self._stop.set()
                return
            except Exception as exc:  # a source that cannot be read, a bug: stop everything
                error = TransferError(f"part {number}: {describe(exc)}")
                error.__cause__ = exc
                errors.append(error)
                self._stop.set()
                return
            with self._lock:
                results[number] = etag

    def _report(self, last: int) -> int:
        done = self.meter.done
        if self.progress is not None and done != last:
            self.progress(done, self.plan.size)
        return done

    def send(self, numbers: list[int]) -> dict[int, str]:
        """PUT the parts ``numbers``; their ETags by part number.

        Any failure stops the other threads within a chunk and is raised here; so is
        anything raised in this thread meanwhile (``KeyboardInterrupt``, the progress
        callback's own exceptions).
        """
        results: dict[int, str] = {}
        errors: list[BaseException] = []
        self._queue.extend(numbers)
        threads = [
            threading.Thread(
                target=self._work, args=(results, errors), daemon=True, name=f"part-{i}"
            )
            for i in range(min(self.concurrency, len(numbers)))
        ]
        for thread in threads:
            thread.start()
        try:
            last = self._report(-1)
            while not errors:
                alive = [thread for thread in threads if thread.is_alive()]
                if not alive:
                    break
                alive[0].join(0.1)
                last = self._report(last)
            if errors:
                raise errors[0]
            self._report(last)
        except BaseException:
            self._stop.set()
            deadline = time.monotonic() + STOP_GRACE_SECONDS
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            raise
        return results


# --- Single PUT ---------------------------------------------------------------------------


def put_single(
    store: httpx.Client,
    upload: dict[str, Any],
    source: Source,
    *,
    retries: int,
    progress: Progress | None,
) -> None:
    """PUT the whole source to a single-upload descriptor (``{url, method, headers}``)."""
    headers = {str(k): str(v) for k, v in (upload.get("headers") or {}).items()}
    headers["Content-Length"] = str(source.size)
    never = threading.Event()
    attempt = 0
    while True:
        body = _Body(source, 0, source.size, stop=never, progress=progress)
        try:
            response = store.request(
                str(upload.get("method") or "PUT"),
                str(upload["url"]),
                content=body,
                headers=headers,
            )
        except httpx.TransportError as exc:
            if attempt >= retries:
                raise TransferError(
                    f"upload: {describe(exc)} (after {attempt + 1} attempts)"
                ) from exc
            time.sleep(backoff(attempt))
            attempt += 1
            continue
        except OSError as exc:
            raise TransferError(f"reading the source: {describe(exc)}") from exc
        if response.is_success:
            if progress is not None and source.size == 0:
                progress(0, 0)
            return
        if response.status_code == 412 and attempt > 0:
            # The URL refuses a second write (If-None-Match): an earlier attempt's bytes
            # arrived though its answer was lost. Complete verifies them.
            return
        if response.status_code in RETRYABLE and attempt < retries:
            wait = retry_after(response)
            time.sleep(min(30.0, backoff(attempt) if wait is None else wait))
            attempt += 1
            continue
        raise _refusal("the upload", response)


# --- Download -----------------------------------------------------------------------------


def download(
    store: httpx.Client,
    url: str,
    destination: Destination,
    *,
    retries: int,
    progress: Progress | None,
) -> int:
    """GET ``url`` into a path (written to a temporary file beside it, then renamed, so a
    failed download never leaves half a file) or a binary file object. Returns the bytes
    written."""
    if isinstance(destination, (str, os.PathLike)):
        target = Path(destination)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        try:
            with os.fdopen(handle, "wb") as out:
                written = _fetch(store, url, out, retries=retries, progress=progress)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return written
    return _fetch(store, url, destination, retries=retries, progress=progress)


def _fetch(
    store: httpx.Client,
    url: str,
    out: IO[bytes],
    *,
    retries: int,
    progress: Progress | None,
) -> int:
    start = out.tell() if out.seekable() else None
    written, total, attempt = 0, 0, 0
    while True:
        headers = {"Range": f"bytes={written}-"} if written else {}
        try:
            with store.stream("GET", url, headers=headers) as response:
                if response.status_code == 200 and written:
                    # The store sent everything again instead of the rest: start over.
                    if start is None:
                        raise TransferError("the download broke and cannot be resumed")
                    out.seek(start)
                    out.truncate()
                    written = 0
                if not response.is_success:
                    response.read()
                    if response.status_code in RETRYABLE and attempt < retries:
                        time.sleep(backoff(attempt))
                        attempt += 1
                        continue
                    raise _refusal("the download", response)
                if not written:
                    total = int(response.headers.get("Content-Length") or 0)
                    if progress is not None:
                        progress(0, total)
                for chunk in response.iter_bytes(CHUNK_READ):
                    out.write(chunk)
                    written += len(chunk)
                    if progress is not None:
                        progress(written, total)
            if total and written < total:
                raise httpx.ReadError(f"the connection closed after {written} of {total} bytes")
            return written
        except httpx.TransportError as exc:
            if attempt >= retries:
                raise TransferError(
                    f"download: {describe(exc)} (after {attempt + 1} attempts)"
                ) from exc
            time.sleep(backoff(attempt))
            attempt += 1
