/** `client.folders`: list folders, and move, delete or restore a whole folder (a job). */
import { Resource } from "./resource.js";
import type { Folder, Job, Schemas } from "./types.js";

export class Folders extends Resource {
  /** The direct child folders of `parent` (default: the root), by name. */
  list(options: { parent?: string; limit?: number } = {}): AsyncGenerator<Folder> {
    return this.api.pages<Folder>("/folders", options);
  }

  /** Every file at or below `from` gets the same place under `to` (`""` is the root); no
   * byte moves. Resolves to the job (with `wait`, once it has finished). */
  move(options: { from: string; to: string }, wait: WaitOptions = {}): Promise<Job> {
    return this.operate("move", { from: options.from, to: options.to }, wait);
  }

  /** Soft-deletes every file at or below `path`, each restorable in the grace window. */
  delete(path: string, wait: WaitOptions = {}): Promise<Job> {
    return this.operate("delete", { path }, wait);
  }

  /** Restores every deleted, restorable file at or below `path`. */
  restore(path: string, wait: WaitOptions = {}): Promise<Job> {
    return this.operate("restore", { path }, wait);
  }

  private async operate(action: string, json: object, wait: WaitOptions): Promise<Job> {
    const path = `/folders/${action}`;
    const job = (await this.api.request<Schemas["JobData"]>("POST", path, { json })).data;
    return wait.wait ? this.client.jobs.wait(job.id, wait) : job;
  }
}

export interface WaitOptions {
  /** Resolve once the job has finished (it rejects with JobFailedError if it failed). */
  wait?: boolean;
  /** How long to wait (default 60 000). */
  timeoutMs?: number;
}
