"""Multipart uploads through the client: parallel parts, interruption and resume, expired
part URLs, and a store that goes away mid-upload."""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from storage_client import Client, StorageError, TransferError, _transfer

from storage_service import objectstore
from tests.client.conftest import MIB, write_random
from tests.factories import Actor
from tests.proxy import TcpProxy
from uploads.models import UploadSession
from uploads.sizing import plan_parts as server_plan

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SIZE = 40 * MIB  # five 8 MiB parts
PART = 8 * MIB


class FlakySource(io.BytesIO):
    """In-memory bytes that count what is read, and can fail or stall at an offset."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0
        self.fail_at: int | None = None
        self.on_offset: tuple[int, Callable[[], object]] | None = None
        self._lock = threading.Lock()

    def read(self, size: int | None = -1, /) -> bytes:
        position = self.tell()
        if self.fail_at is not None and position >= self.fail_at:
            raise OSError("the disk went away")
        if self.on_offset is not None and position >= self.on_offset[0]:
            hook, self.on_offset = self.on_offset[1], None
            hook()
        data = super().read(size)
        with self._lock:
            self.bytes_read += len(data)
        return data


def session_of(upload_id: str) -> UploadSession:
    return UploadSession.objects.get(id=upload_id)


def held_parts(client: Client, upload_id: str) -> list[int]:
    return [part.part_number for part in client.uploads.parts(upload_id)]


def downloaded(client: Client, file_id: str) -> bytes:
    buffer = io.BytesIO()
    client.files.download(file_id, buffer)
    return buffer.getvalue()


def test_a_40_mib_file_goes_up_in_parallel_parts(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    data = write_random(source, SIZE)
    seen: list[tuple[int, int]] = []

    file = client.files.upload(source, path="media", progress=lambda d, t: seen.append((d, t)))

    assert (file.size, file.status, file.path) == (SIZE, "uploaded", "media")
    assert file.checksum == "etag:" + _multipart_etag(data, PART)
    session = UploadSession.objects.get(file_id=file.id)
    assert (session.status, session.part_count) == ("completed", 5)
    assert seen[-1] == (SIZE, SIZE) and all(total == SIZE for _, total in seen)
    assert hashlib.sha256(downloaded(client, file.id)).digest() == hashlib.sha256(data).digest()


def test_below_the_threshold_one_put_above_it_parts(actor: Actor, make_client: Any) -> None:
    client = make_client(actor, multipart_threshold=9 * MIB, max_concurrency=2)
    small = client.files.upload(io.BytesIO(b"s" * (9 * MIB - 1)), filename="small.bin")
    large = client.files.upload(io.BytesIO(b"l" * (9 * MIB)), filename="large.bin")
    assert not UploadSession.objects.filter(file_id=small.id).exists()
    assert session_of(UploadSession.objects.get(file_id=large.id).id).part_count == 2
    assert downloaded(client, large.id) == b"l" * (9 * MIB)


def test_an_upload_interrupted_after_two_parts_resumes_with_only_the_missing_ones(
    actor: Actor, make_client: Any
) -> None:
    client = make_client(actor, max_concurrency=1)
    data = b"".join(bytes([n]) * PART for n in range(4)) + b"tail" * 1000
    source = FlakySource(data)
    source.fail_at = 2 * PART  # the third part cannot be read

    with pytest.raises(TransferError) as caught:
        client.files.upload(source, filename="big.bin")

    upload_id = caught.value.upload_id
    assert upload_id and upload_id.startswith("upload_")
    assert "the disk went away" in str(caught.value)
    assert session_of(upload_id).status == "active"  # left active, to resume
    assert held_parts(client, upload_id) == [1, 2]

    source.fail_at = None
    source.bytes_read = 0
    source.seek(0)  # a file object is read from its position, as for the first attempt
    seen: list[int] = []
    file = client.uploads.resume(upload_id, source, progress=lambda d, t: seen.append(d))

    assert (file.status, file.size) == ("uploaded", len(data))
    assert session_of(upload_id).status == "completed"
    # Parts 1 and 2 were read once to check their checksums, parts 3 to 5 once to send them:
    # nothing was sent twice.
    assert source.bytes_read == len(data)
    # The first report already counts the two held parts (it may come once part 3 is on
    # its way, as reports follow the bytes sent).
    assert 2 * PART <= seen[0] < 3 * PART and seen[-1] == len(data)
    assert downloaded(client, file.id) == data


def test_ctrl_c_leaves_the_session_active_and_resume_finishes_it(
    actor: Actor, make_client: Any, tmp_path: Path
) -> None:
    client = make_client(actor, max_concurrency=1)
    path = tmp_path / "big.bin"
    data = write_random(path, SIZE)
    source = FlakySource(data)
    gate = threading.Event()
    source.on_offset = (2 * PART, lambda: gate.wait(10))  # part 3 waits for the Ctrl-C

    def ctrl_c(done: int, total: int) -> None:
        if done >= 2 * PART:
            gate.set()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as caught:
        client.files.upload(source, filename="big.bin", progress=ctrl_c)

    upload_id = caught.value.upload_id  # type: ignore[attr-defined]
    assert session_of(upload_id).status == "active"
    assert held_parts(client, upload_id) == [1, 2]

    file = client.uploads.resume(upload_id, path)

    assert file.size == SIZE
    assert downloaded(client, file.id) == data


def test_resume_sends_again_a_held_part_whose_bytes_differ(actor: Actor, make_client: Any) -> None:
    client = make_client(actor, max_concurrency=1, multipart_threshold=PART)
    wrong = FlakySource(b"A" * PART + b"B" * PART + b"C" * 100)
    wrong.fail_at = 2 * PART
    with pytest.raises(StorageError) as caught:
        client.files.upload(wrong, filename="x.bin")
    upload_id = caught.value.upload_id
    assert upload_id is not None

    right = b"A" * PART + b"Z" * PART + b"C" * 100  # part 2 changed since
    file = client.uploads.resume(upload_id, io.BytesIO(right))

    assert downloaded(client, file.id) == right


def test_resume_with_a_source_of_another_size_is_refused(actor: Actor, make_client: Any) -> None:
    client = make_client(actor, max_concurrency=1, multipart_threshold=PART)
    source = FlakySource(b"x" * (3 * PART))
    source.fail_at = PART
    with pytest.raises(StorageError) as caught:
        client.files.upload(source, filename="x.bin")
    upload_id = caught.value.upload_id
    assert upload_id is not None

    with pytest.raises(StorageError):
        client.uploads.resume(upload_id, io.BytesIO(b"x" * (5 * PART)))
    assert session_of(upload_id).status == "active"


def test_the_same_idempotency_key_resumes_nothing_twice(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    write_random(source, SIZE)
    first = client.files.upload(source, idempotency_key="nightly-backup-1")
    again = client.files.upload(source, idempotency_key="nightly-backup-1")
    assert again.id == first.id and again.status == "uploaded"
    assert UploadSession.objects.count() == 1


def test_a_part_url_the_store_refuses_is_signed_again(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The URLs of the start answer are spoiled (as an expired one would be, to the store):
    # each part is refused once (403), signed again through the API, and sent.
    source = tmp_path / "big.bin"
    data = write_random(source, SIZE)
    add_urls = _transfer.PartSender.add_urls
    spoiled: list[int] = []

    def spoil_the_first(self: _transfer.PartSender, parts: Any) -> None:
        parts = list(parts)
        if not spoiled:
            for part in parts:
                part["url"] = part["url"].replace("X-Amz-Signature=", "X-Amz-Signature=0")
            spoiled.extend(p["partNumber"] for p in parts)
        add_urls(self, parts)

    monkeypatch.setattr(_transfer.PartSender, "add_urls", spoil_the_first)
    file = client.files.upload(source)

    assert spoiled == [1, 2, 3, 4, 5]
    assert downloaded(client, file.id) == data


def test_urls_about_to_expire_are_refreshed_before_use(
    actor: Actor, make_client: Any, serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # URLs live 60 s (the server's shortest); a margin of 61 s makes every one "about to
    # expire", so each part first asks the API for a fresh URL.
    monkeypatch.setattr(_transfer, "REFRESH_MARGIN_SECONDS", 61.0)
    refresh = _transfer.PartSender.refresh
    asked: list[list[int]] = []

    def counting(self: _transfer.PartSender, numbers: list[int]) -> None:
        asked.append(list(numbers))
        refresh(self, numbers)

    monkeypatch.setattr(_transfer.PartSender, "refresh", counting)
    source = tmp_path / "big.bin"
    data = write_random(source, SIZE)
    with serve(SERVICE_UPLOAD_URL_TTL_SECONDS="60") as base:
        client = make_client(actor, base_url=base)
        file = client.files.upload(source)
        assert downloaded(client, file.id) == data
    assert sorted(n for numbers in asked for n in numbers) == [1, 2, 3, 4, 5]


def test_parts_survive_the_store_going_away_for_a_moment(
    actor: Actor, make_client: Any, serve: Any, tmp_path: Path
) -> None:
    # Presigned URLs point at a proxy in front of SeaweedFS (the service itself talks to the
    # store directly); the proxy is cut during part 2 and restored a second later.
    store = urlsplit(str(objectstore.storage().endpoint_url))
    source_path = tmp_path / "big.bin"
    data = write_random(source_path, SIZE)
    with TcpProxy((store.hostname or "127.0.0.1", store.port or 80)) as proxy:
        public = f"http://127.0.0.1:{proxy.port}"
        with serve(AWS_S3_PUBLIC_ENDPOINT_URL=public) as base:
            client = make_client(actor, base_url=base, max_concurrency=2)
            source = FlakySource(data)

            def outage() -> None:
                proxy.cut()
                threading.Timer(1.0, proxy.restore).start()

            source.on_offset = (PART + PART // 2, outage)
            file = client.files.upload(source, filename="big.bin")
            assert file.size == SIZE
            assert downloaded(client, file.id) == data


def test_the_client_cuts_parts_as_the_service_does() -> None:
    # Resume has only the source's size to go on: its part plan must be the service's.
    for size in [1, PART - 1, PART, PART + 1, 80_000 * MIB, 80_000 * MIB + 1, 5 * 1024**4]:
        ours, theirs = _transfer.plan_parts(size), server_plan(size)
        assert (ours.part_size, ours.part_count) == (theirs.part_size, theirs.part_count)
        assert ours.length(ours.part_count) == theirs.part_length(theirs.part_count)


def _multipart_etag(data: bytes, part: int) -> str:
    digests = [hashlib.md5(data[i : i + part]).digest() for i in range(0, len(data), part)]
    return f"{hashlib.md5(b''.join(digests)).hexdigest()}-{len(digests)}"
