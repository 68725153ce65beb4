/** `client.jobs`: the long operations (folder moves, deletes, restores) and waiting for them. */
import { JobFailedError, WaitTimeoutError } from "./errors.js";
import { sleep } from "./http.js";
import { Resource } from "./resource.js";
import type { Job, Schemas } from "./types.js";

/** Work on many files (a folder's move, delete, restore), done by the service's workers. */
export class Jobs extends Resource {
  async get(jobId: string): Promise<Job> {
    return (await this.api.request<Schemas["JobData"]>("GET", `/jobs/${jobId}`)).data;
  }

  /** Newest first, every page. */
  list(
    options: { status?: Job["status"]; type?: Job["type"]; limit?: number } = {},
  ): AsyncGenerator<Job> {
    return this.api.pages<Job>("/jobs", options);
  }

  /** Poll until the job has `succeeded` (JobFailedError if it `failed`, WaitTimeoutError
   * after `timeoutMs`, default 60 000). */
  async wait(jobId: string, options: { timeoutMs?: number } = {}): Promise<Job> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    let delay = 0.2;
    for (;;) {
      const job = await this.get(jobId);
      if (job.status === "succeeded") return job;
      if (job.status === "failed") {
        throw new JobFailedError(`job ${job.id} failed: ${job.error?.message ?? "no reason"}`, {
          code: job.error?.code ?? "JOB_FAILED",
          details: job.error?.details,
          job,
        });
      }
      if (Date.now() + delay * 1000 > deadline) {
        throw new WaitTimeoutError(`job ${job.id} still ${job.status}`, { code: "WAIT_TIMEOUT" });
      }
      await sleep(delay);
      delay = Math.min(2, delay * 1.5);
    }
  }
}
