"""``client.folders``: list folders, and move, delete or restore a whole folder (a job)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from storage_client._resource import Resource
from storage_client._transfer import Progress
from storage_client.models import Folder, Job


class Folders(Resource):
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
