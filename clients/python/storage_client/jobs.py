"""``client.jobs``: the long operations (folder moves, deletes, restores) and waiting for
them."""

from __future__ import annotations

import time
from collections.abc import Iterator

from storage_client._resource import Resource
from storage_client._transfer import Progress
from storage_client.errors import JobFailedError, WaitTimeoutError
from storage_client.models import Job


class Jobs(Resource):
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
