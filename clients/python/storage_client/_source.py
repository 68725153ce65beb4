"""What to upload: a path or a binary file object, read in ranges from any thread.

Parts are read as they are sent, a chunk at a time, so memory stays at about
``concurrency x CHUNK`` whatever the file size. A path is read with ``os.pread`` (no shared
file position, so threads never wait for each other); a file object is shared, so each chunk
is a seek and a read under a lock.
"""

from __future__ import annotations

import hashlib
import io
import mimetypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Union

CHUNK = 1024 * 1024
DEFAULT_CONTENT_TYPE = "application/octet-stream"

SourceLike = Union[str, "os.PathLike[str]", BinaryIO]


class Source:
    """A fixed range of bytes to upload: ``size`` bytes from ``start``."""

    def __init__(self, source: SourceLike) -> None:
        self._lock = threading.Lock()
        self._owned: BinaryIO | None = None
        if isinstance(source, (str, os.PathLike)):
            path = Path(source)
            self.name: str | None = path.name
            self._file: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = self._file
            self.start = 0
            self.size = os.fstat(self._file.fileno()).st_size
            self._fd: int | None = self._file.fileno() if hasattr(os, "pread") else None
            return
        given: object = source  # whatever the caller passed, whatever its annotation says
        if isinstance(given, io.TextIOBase) or not hasattr(given, "read"):
            raise TypeError("source must be a path or a binary file object (opened with 'rb')")
        if not source.seekable():
            raise TypeError(
                "source must be seekable (its size is read from it, and parts are re-read on "
                "retry); write a stream to a temporary file first"
            )
        name = getattr(source, "name", None)
        self.name = os.path.basename(name) if isinstance(name, str) and name else None
        self._file = source
        self._fd = None
        self.start = source.tell()
        self.size = source.seek(0, io.SEEK_END) - self.start
        source.seek(self.start)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self, offset: int, length: int, chunk: int = CHUNK) -> Iterator[bytes]:
        """The bytes ``offset .. offset + length`` of the source, ``chunk`` at a time."""
        position, end = self.start + offset, self.start + offset + length
        while position < end:
            wanted = min(chunk, end - position)
            if self._fd is not None:
                data = os.pread(self._fd, wanted, position)
            else:
                with self._lock:
                    self._file.seek(position)
                    data = self._file.read(wanted)
            if not data:
                raise OSError(
                    f"the source ended at byte {position - self.start}, before its size "
                    f"({self.size}): it changed while being uploaded"
                )
            position += len(data)
            yield data

    def md5(self, offset: int, length: int) -> str:
        # A part's ETag at S3 and SeaweedFS is the MD5 of its bytes: a check, not security.
        digest = hashlib.md5(usedforsecurity=False)
        for data in self.chunks(offset, length):
            digest.update(data)
        return digest.hexdigest()


def guess_content_type(filename: str | None) -> str:
    """From the file name's extension; ``application/octet-stream`` when unknown."""
    if filename:
        guessed, _ = mimetypes.guess_type(filename, strict=False)
        if guessed:
            return guessed
    return DEFAULT_CONTENT_TYPE
