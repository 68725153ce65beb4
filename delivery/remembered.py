"""The resolution rows a process keeps, so that a URL resolved again costs no SQL statement.

A page's images are resolved over and over: the same key, file and transform. What resolving
reads of them (delivery/selectors.py ``resolution_rows``) only changes when the file changes
or the key is revoked, and each such change announces its project once it commits
(events/changes.py). So a process keeps the rows of settled targets (an uploaded file, or
its ready variant) for up to SERVICE_DELIVERY_REMEMBER_SECONDS, and forgets a project's rows
the moment it hears the project named: a revocation, a delete or a replace still shows on
the next resolution, as it does when every resolution reads the rows.

The signature, the expiry, the budget and the bandwidth are checked and counted on every
resolution as before; only the read is kept.

A read that was under way when its project was named is not kept (it may have seen the
state before the change), and neither is any read while the listener is not subscribed:
after Redis went away, this process keeps nothing until it hears every change again. A
change whose announcement was lost (its publish failed while this listener stayed
connected) shows once the rows' lifetime ends. Refusals and targets still on their way (a
pending file, a variant not ready) are never kept: each resolution reads them again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from django.conf import settings

from delivery.selectors import ResolutionRows, resolution_rows
from events.changes import ChangeListener
from files.models import File
from variants.models import Variant

# The most rows one process keeps; the oldest go first.
CAPACITY = 20_000
# Projects whose last change is remembered (to refuse a read that raced it); past this many
# the record starts again, refusing the reads under way.
CHANGES_KEPT = 10_000


class RowsKey(NamedTuple):
    key_id: str
    file_id: str
    version: int | None
    label: str | None


class _Kept(NamedTuple):
    rows: ResolutionRows
    project_id: str
    until: float


Reader = Callable[..., ResolutionRows | None]


class RememberedRows:
    """Rows read by ``read`` (``resolution_rows``'s keywords), kept for
    SERVICE_DELIVERY_REMEMBER_SECONDS while a listener hears every change. Thread-safe:
    request threads read, the listener forgets."""

    def __init__(self, *, read: Reader = resolution_rows) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._kept: OrderedDict[RowsKey, _Kept] = OrderedDict()
        self._by_project: dict[str, set[RowsKey]] = {}
        # Every change heard advances the counter; a read is kept only when no change of
        # its project was heard since it began, and it began after the last reset.
        self._counter = 0
        self._floor = 0
        self._changed_at: dict[str, int] = {}
        self._listener: ChangeListener | None = None

    def rows(
        self, *, key_id: str, file_id: str, version: int | None, label: str | None
    ) -> ResolutionRows | None:
        wanted = RowsKey(key_id, file_id, version, label)
        if self._listener is not None:
            self._listener.catch_up()  # changes announced before this request, heard first
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(wanted)
            if kept is not None and kept.until > now:
                return kept.rows
            began = self._counter
        listener = self._listening()
        rows = self._read(key_id=key_id, file_id=file_id, version=version, label=label)
        if rows is not None and listener is not None and _settled(rows, label):
            until = now + settings.SERVICE_DELIVERY_REMEMBER_SECONDS
            self._keep(wanted, rows, began, listener, until)
        return rows

    def _keep(
        self,
        wanted: RowsKey,
        rows: ResolutionRows,
        began: int,
        listener: ChangeListener,
        until: float,
    ) -> None:
        project_id = rows.key.project_id
        with self._lock:
            if not listener.listening or began < self._floor:
                return
            if self._changed_at.get(project_id, -1) > began:
                return
            self._kept[wanted] = _Kept(rows, project_id, until)
            self._kept.move_to_end(wanted)
            self._by_project.setdefault(project_id, set()).add(wanted)
            while len(self._kept) > CAPACITY:
                oldest, dropped = self._kept.popitem(last=False)
                self._unindex(oldest, dropped.project_id)

    def _unindex(self, key: RowsKey, project_id: str) -> None:
        keys = self._by_project.get(project_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_project[project_id]

    def _listening(self) -> ChangeListener | None:
        """The listener, started on the first resolution (after any fork of the server's
        processes); None until it is subscribed."""
        if self._listener is None:
            with self._lock:
                if self._listener is None:
                    self._listener = ChangeListener(self.forget_project, self.forget_all)
                    self._listener.start()
        return self._listener if self._listener.listening else None

    def forget_project(self, project_id: str) -> None:
        with self._lock:
            self._counter += 1
            if len(self._changed_at) >= CHANGES_KEPT:
                self._changed_at.clear()
                self._floor = self._counter
            self._changed_at[project_id] = self._counter
            for key in self._by_project.pop(project_id, ()):
                self._kept.pop(key, None)

    def forget_all(self) -> None:
        with self._lock:
            self._counter += 1
            self._floor = self._counter
            self._changed_at.clear()
            self._kept.clear()
            self._by_project.clear()

    def stop(self) -> None:
        """Stop listening and forget everything (tests)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()
        self.forget_all()

    def wait_until_listening(self, seconds: float) -> bool:
        """Start the listener if need be and wait until it is subscribed (tests, benches)."""
        self._listening()
        assert self._listener is not None
        return self._listener.wait_until_listening(seconds)


def _settled(rows: ResolutionRows, label: str | None) -> bool:
    """Rows that only a change announced by its project can change: an uploaded file, and
    for a transform its ready variant."""
    if rows.file is None or rows.file.status != File.Status.UPLOADED:
        return False
    if label is None:
        return True
    return rows.variant is not None and rows.variant.status == Variant.Status.READY


_remembered: RememberedRows | None = None
_remembered_lock = threading.Lock()


def remembered_rows(
    *, key_id: str, file_id: str, version: int | None, label: str | None
) -> ResolutionRows | None:
    """``resolution_rows``, kept by this process when SERVICE_DELIVERY_REMEMBER_SECONDS is
    above 0 (read every time otherwise)."""
    seconds = settings.SERVICE_DELIVERY_REMEMBER_SECONDS
    if seconds <= 0:
        return resolution_rows(key_id=key_id, file_id=file_id, version=version, label=label)
    return process_rows().rows(key_id=key_id, file_id=file_id, version=version, label=label)


def process_rows() -> RememberedRows:
    """This process's remembered rows (made on first use)."""
    global _remembered
    if _remembered is None:
        with _remembered_lock:
            if _remembered is None:
                _remembered = RememberedRows()
    return _remembered
