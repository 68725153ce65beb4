/**
 * `new StorageClient({ apiKey, baseUrl })` and its resources: files, folders, uploads,
 * variants, webhooks. For servers (Node 18+): the API key must never reach a browser; pages
 * upload with `storage-service-client/browser`.
 */
import { webCrypto } from "./crypto.js";
import { DELIVERY_KEY_ENV, DeliveryKey, type DeliveryUrlOptions, signedOptions } from "./delivery.js";
import { UploadTokens } from "./uploadtokens.js";
import {
  type CompletedPart,
  ConfigurationError,
  ConflictError,
  JobFailedError,
  StorageError,
  TransferError,
  VariantFailedError,
  WaitTimeoutError,
} from "./errors.js";
import { Api, describe, sleep } from "./http.js";
import { type UploadSource, guessContentType, openSource, type OpenedSource } from "./source.js";
import {
  type MultipartSession,
  type OnProgress,
  type PresignedPart,
  putSingle,
  sendParts,
} from "./transfer.js";
import type {
  DownloadUrl,
  Folder,
  HeldPart,
  Job,
  Me,
  Schemas,
  StoredFile,
  UploadDescriptor,
  Variant,
} from "./types.js";
import { Events, Webhooks } from "./webhooks.js";

const MIB = 1024 * 1024;
const MIN_PART_SIZE = 8 * MIB;
const MAX_PARTS = 10_000;
export const API_KEY_ENV = "STORAGE_API_KEY";
export const BASE_URL_ENV = "STORAGE_BASE_URL";

// A multipart complete that fails with one of these has ended the session (or it was never
// open): there is nothing to resume, so the error carries no upload id.
const SESSION_ENDED = new Set(["CONTENT_TYPE_MISMATCH", "UPLOAD_NOT_ACTIVE", "FILE_NOT_PENDING"]);

export interface ClientOptions {
  /** Default: `STORAGE_API_KEY` (on Node). */
  apiKey?: string;
  /** The service's origin (`https://files.example.com`); default: `STORAGE_BASE_URL`. */
  baseUrl?: string;
  /** Per API request (default 60 000). */
  timeoutMs?: number;
  /** Retries of 429, 503 and lost connections (default 3). */
  maxRetries?: number;
  /** A `Retry-After` longer than this is not waited for (default 60). */
  maxRetryWaitSeconds?: number;
  /** Uploads this size or larger go up in parallel parts (default 32 MiB). */
  multipartThreshold?: number;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  /** Attempts per part (or single PUT) after the first (default 5). */
  partRetries?: number;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** `dk_…:dsec_…`: `files.deliveryUrl` signs offline with it (else asks the API). Default:
   * `STORAGE_DELIVERY_KEY` (on Node). */
  deliveryKey?: string;
  /** Where delivery URLs live when served apart; default: `baseUrl`. */
  deliveryBaseUrl?: string;
}

function environment(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process;
  return process?.env?.[name] || undefined;
}

export class StorageClient {
  readonly baseUrl: string;
  readonly deliveryKey: DeliveryKey | undefined;
  readonly deliveryBaseUrl: string;
  readonly files: Files;
  readonly folders: Folders;
  readonly uploads: Uploads;
  readonly variants: Variants;
  readonly webhooks: Webhooks;
  readonly events: Events;
  readonly jobs: Jobs;
  readonly uploadTokens: UploadTokens;
  /** @internal */
  readonly api: Api;
  /** @internal */
  readonly settings: Required<Pick<ClientOptions, "multipartThreshold" | "concurrency" | "partRetries">>;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? environment(API_KEY_ENV);
    let baseUrl = options.baseUrl ?? environment(BASE_URL_ENV);
    if (!apiKey) throw new ConfigurationError(`no API key: pass apiKey or set ${API_KEY_ENV}`);
    if (!baseUrl) throw new ConfigurationError(`no base URL: pass baseUrl or set ${BASE_URL_ENV}`);
    baseUrl = baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
    if (!/^https?:\/\//.test(baseUrl)) {
      throw new ConfigurationError(`the base URL must start with http:// or https://: ${baseUrl}`);
    }
    this.baseUrl = baseUrl;
    const deliveryKey = options.deliveryKey ?? environment(DELIVERY_KEY_ENV);
    this.deliveryKey = deliveryKey ? new DeliveryKey(deliveryKey) : undefined;
    this.deliveryBaseUrl = (options.deliveryBaseUrl ?? baseUrl).replace(/\/+$/, "");
    this.api = new Api({
      apiKey,
      baseUrl,
      timeoutMs: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 3,
      maxRetryWaitSeconds: options.maxRetryWaitSeconds ?? 60,
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    });
    this.settings = {
      multipartThreshold: options.multipartThreshold ?? 32 * MIB,
      concurrency: Math.max(1, options.concurrency ?? 4),
      partRetries: options.partRetries ?? 5,
    };
    this.files = new Files(this);
    this.folders = new Folders(this);
    this.uploads = new Uploads(this);
    this.variants = new Variants(this);
    this.jobs = new Jobs(this);
    this.webhooks = new Webhooks(this.api);
    this.events = new Events(this.api);
    this.uploadTokens = new UploadTokens(this.api);
  }

  /** What the project stores and serves in the key's mode, and its limits (null when unset). */
  async usage(): Promise<Schemas["Usage"]> {
    return (await this.api.request<Schemas["UsageData"]>("GET", "/usage")).data;
  }

  /** The project, organization and API key this client authenticates as. */
  async me(): Promise<Me> {
    return (await this.api.request<Schemas["MeData"]>("GET", "/me")).data;
  }
}

/** What a file is declared as when its upload starts. */
export interface Declared {
  filename: string;
  contentType: string;
  size: number;
  path?: string | null;
  metadata?: Record<string, unknown> | null;
  /** When the service deletes it (restorable in the grace window); must be in the future. */
  expiresAt?: string | Date | null;
  /** Sent as `Idempotency-Key`: a retry with the same key never makes a second file. */
  idempotencyKey?: string;
}

export interface UploadOptions {
  filename?: string;
  path?: string | null;
  metadata?: Record<string, unknown> | null;
  expiresAt?: string | Date | null;
  contentType?: string;
  onProgress?: OnProgress;
  /** A stream's length: its parts are then read as they go instead of all at once. */
  size?: number;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ListOptions {
  /** An exact folder (`"/"` for the root). */
  path?: string;
  status?: StoredFile["status"];
  search?: string;
  contentType?: string;
  sortBy?: "createdAt" | "updatedAt" | "filename" | "size";
  order?: "asc" | "desc";
  /** Files per page fetched. */
  limit?: number;
  /** With `path`: that folder and every folder below it. */
  recursive?: boolean;
  /** Files whose metadata has each key with this value (`{ year: 2026 }` matches 2026 and
   * "2026"); up to 10, all must match. */
  metadata?: Record<string, string | number | boolean>;
}

function declaredBody(declared: Declared): Record<string, unknown> {
  const body: Record<string, unknown> = {
    filename: declared.filename,
    contentType: declared.contentType,
    size: declared.size,
  };
  if (declared.path !== undefined) body.path = declared.path;
  if (declared.metadata !== undefined) body.metadata = declared.metadata;
  if (declared.expiresAt !== undefined) body.expiresAt = isoOrNull(declared.expiresAt);
  return body;
}

function isoOrNull(when: string | Date | null): string | null {
  return when instanceof Date ? when.toISOString() : when;
}

function keyHeader(key: string | undefined): Record<string, string> | undefined {
  return key ? { "Idempotency-Key": key } : undefined;
}

async function newKey(): Promise<string> {
  const random = new Uint8Array(16);
  (await webCrypto()).getRandomValues(random);
  return `sdk-${Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The part size and count the service chooses for a size (for a resume). */
export function planParts(size: number): { partSize: number; partCount: number; size: number } {
  const perPart = Math.ceil(size / MAX_PARTS);
  const partSize = Math.max(MIN_PART_SIZE, Math.ceil(perPart / MIB) * MIB);
  return { size, partSize, partCount: Math.max(1, Math.ceil(size / partSize)) };
}

class Resource {
  protected readonly api: Api;
  constructor(protected readonly client: StorageClient) {
    this.api = client.api;
  }
}

export class Files extends Resource {
  /**
   * Upload a path (Node), Blob, bytes or stream; resolves to the file, `uploaded`.
   *
   * Below the client's `multipartThreshold` the bytes go up in one PUT, otherwise in
   * parallel parts. The creation carries an `Idempotency-Key` (a new random one unless
   * given), so retrying it never makes two files. If a multipart upload is interrupted, the
   * error's `uploadId` names its session, left active for `client.uploads.resume`.
   */
  async upload(source: UploadSource, options: UploadOptions = {}): Promise<StoredFile> {
    const src = await openSource(source, options.size);
    try {
      const filename = options.filename ?? src.name;
      if (!filename) throw new TypeError("filename is needed for a source without a name");
      const declared: Declared = {
        filename,
        contentType: options.contentType ?? src.type ?? guessContentType(filename),
        size: src.size,
        path: options.path,
        metadata: options.metadata,
        expiresAt: options.expiresAt,
        idempotencyKey: options.idempotencyKey ?? (await newKey()),
      };
      if (src.size < this.client.settings.multipartThreshold) {
        const { file, upload } = await this.startUpload(declared);
        if (file.status !== "pending") return await this.get(file.id); // a key used again
        await putSingle(await src.read(0, src.size), upload, {
          onProgress: options.onProgress,
          signal: options.signal,
          retries: this.client.settings.partRetries,
        });
        return await this.complete(file.id);
      }
      const { file, upload } = await this.client.uploads.create(declared);
      if (upload.status === "completed") return file; // a key used again after success
      return await this.client.uploads.transfer(upload.id, src, upload, options);
    } finally {
      await src.close();
    }
  }

  /** Step 1 of a single upload whose bytes come from elsewhere (a browser): a pending file
   * and where to PUT its bytes. Then `complete(file.id)`. */
  async startUpload(declared: Declared): Promise<{ file: StoredFile; upload: UploadDescriptor }> {
    return this.api.request<Schemas["FileWithUpload"]>("POST", "/files/upload", {
      json: declaredBody(declared),
      headers: keyHeader(declared.idempotencyKey),
      idempotent: declared.idempotencyKey !== undefined,
    });
  }

  /** Step 2 of a single upload: the service checks the stored bytes' size and type, and the
   * file becomes `uploaded`. */
  async complete(fileId: string): Promise<StoredFile> {
    await this.finish(`/files/${fileId}/complete`, fileId);
    return this.get(fileId);
  }

  /** POST a complete; if the answer was lost and the retry finds it done (409), the file as
   * it is tells whether the first one succeeded. */
  private async finish(path: string, fileId: string): Promise<unknown> {
    try {
      return await this.api.request("POST", path, { idempotent: true });
    } catch (error) {
      const done = ["FILE_NOT_PENDING", "NO_REPLACE_IN_PROGRESS", "UPLOAD_NOT_ACTIVE"];
      if (!(error instanceof ConflictError) || !done.includes(error.code)) throw error;
      const current = await this.get(fileId);
      if (current.status !== "uploaded") throw error;
      return current;
    }
  }

  async get(fileId: string): Promise<StoredFile> {
    return (await this.api.request<Schemas["FileData"]>("GET", `/files/${fileId}`)).data;
  }

  /** Every matching file, page after page (fetched as the iteration goes):
   * `for await (const file of client.files.list({ path: "/" }))`. Deleted files appear
   * only with `status: "deleted"`. */
  list(options: ListOptions = {}): AsyncGenerator<StoredFile> {
    const { metadata, ...query } = options;
    const params: Record<string, string | number | boolean | undefined> = { ...query };
    for (const [key, value] of Object.entries(metadata ?? {})) params[`metadata[${key}]`] = value;
    return this.api.pages<StoredFile>("/files", params);
  }

  /** Rename, move (`path: null` is the root) or replace the metadata (`null` clears it). */
  async update(
    fileId: string,
    changes: Omit<Schemas["UpdateRequest"], "expiresAt"> & { expiresAt?: string | Date | null },
  ): Promise<StoredFile> {
    const json: Record<string, unknown> = { ...changes };
    if (changes.expiresAt !== undefined) json.expiresAt = isoOrNull(changes.expiresAt);
    return this.api.request<StoredFile>("PATCH", `/files/${fileId}`, { json });
  }

  /** A new file sharing the same bytes (no byte is copied). */
  async copy(fileId: string, options: Schemas["CopyRequest"] = {}): Promise<StoredFile> {
    return this.api.request<StoredFile>("POST", `/files/${fileId}/copy`, { json: options });
  }

  /** New content for the same file id: version + 1 (the previous version is kept). */
  async replace(
    fileId: string,
    source: UploadSource,
    options: { contentType?: string; onProgress?: OnProgress; signal?: AbortSignal } = {},
  ): Promise<StoredFile> {
    const src = await openSource(source);
    try {
      const contentType =
        options.contentType ??
        src.type ??
        (src.name ? guessContentType(src.name) : (await this.get(fileId)).contentType);
      const started = await this.api.request<Schemas["FileWithUpload"]>(
        "POST",
        `/files/${fileId}/replace`,
        { json: { contentType, size: src.size } },
      );
      await putSingle(await src.read(0, src.size), started.upload, {
        onProgress: options.onProgress,
        signal: options.signal,
        retries: this.client.settings.partRetries,
      });
    } finally {
      await src.close();
    }
    return (await this.finish(`/files/${fileId}/replace/complete`, fileId)) as StoredFile;
  }

  /** 1 to 100 operations, each run on its own exactly as its single endpoint (one failing
   * does not stop the others). Resolves to one result per operation, in order: `{ op, id,
   * status, body }`, the single endpoint's HTTP status and JSON body. A malformed batch is
   * refused whole (ValidationError). Sent with an `Idempotency-Key` (random unless given). */
  async batch(
    operations: BatchOperation[],
    options: { idempotencyKey?: string } = {},
  ): Promise<Schemas["BatchResult"][]> {
    const key = options.idempotencyKey ?? (await newKey());
    const body = await this.api.request<Schemas["BatchResultListData"]>("POST", "/files/batch", {
      json: { operations },
      headers: keyHeader(key),
      idempotent: true,
    });
    return body.data;
  }

  /** A presigned GET URL, valid `expiresInSeconds` (60 to 86400; default 3600). */
  async downloadUrl(fileId: string, options: { expiresInSeconds?: number } = {}): Promise<DownloadUrl> {
    const json = options.expiresInSeconds === undefined ? {} : options;
    return this.api.request<DownloadUrl>("POST", `/files/${fileId}/download-url`, { json });
  }

  /** A delivery URL (for `<img src>` and links; cacheable): signed offline with the client's
   * delivery key, else by the API. */
  async deliveryUrl(fileId: string, options: DeliveryUrlOptions = {}): Promise<string> {
    const key = this.client.deliveryKey;
    if (key) return this.client.deliveryBaseUrl + (await key.path(fileId, signedOptions(options)));
    const { version, expiresInSeconds, ...transform } = options;
    const json: Record<string, unknown> = { expiresInSeconds: expiresInSeconds ?? null };
    if (Object.values(transform).some((value) => value !== undefined)) json.transform = transform;
    if (version !== undefined) json.version = version;
    const body = await this.client.api.request<{ url: string }>(
      "POST",
      `/files/${fileId}/delivery-url`,
      { json },
    );
    return body.url;
  }

  /** The file's bytes. */
  async download(fileId: string): Promise<Uint8Array> {
    return fetchBytes((await this.downloadUrl(fileId)).url, this.client.settings.partRetries);
  }

  /** Soft delete: restorable until the purge (7 days by default). */
  async delete(fileId: string): Promise<void> {
    await this.api.request("DELETE", `/files/${fileId}`);
  }

  async restore(fileId: string): Promise<StoredFile> {
    return this.api.request<StoredFile>("POST", `/files/${fileId}/restore`);
  }
}

/** GET a presigned URL's bytes, retrying lost connections and the store's 5xx. */
async function fetchBytes(url: string, retries: number): Promise<Uint8Array> {
  for (let attempt = 0; ; attempt++) {
    let failure: StorageError;
    try {
      const response = await fetch(url);
      if (response.ok) return new Uint8Array(await response.arrayBuffer());
      failure = new TransferError(`the store answered ${response.status} to the download`, {
        status: response.status,
      });
      if (response.status < 500) throw failure;
    } catch (error) {
      if (error instanceof StorageError) throw error;
      failure = new TransferError(`download: ${describe(error)}`, { cause: error });
    }
    if (attempt >= retries) throw failure;
    await sleep(Math.min(8, 0.5 * 2 ** attempt));
  }
}

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

/** One operation of `files.batch`, as its single endpoint takes it. */
export type BatchOperation =
  | {
      op: "update";
      id: string;
      filename?: string;
      path?: string | null;
      metadata?: Record<string, unknown> | null;
    }
  | { op: "delete"; id: string }
  | { op: "restore"; id: string }
  | { op: "copy"; id: string; path?: string | null; filename?: string };

/** Multipart sessions: `resume` for interrupted uploads, and the steps one by one for bytes
 * that do not pass through this process (a browser's). */
export class Uploads extends Resource {
  /** Start a session: a pending file, and a presigned PUT URL for every part. */
  async create(declared: Declared): Promise<{ file: StoredFile; upload: MultipartSession }> {
    const body = await this.api.request<Schemas["MultipartStartedData"]>(
      "POST",
      "/uploads/multipart",
      {
        json: declaredBody(declared),
        headers: keyHeader(declared.idempotencyKey),
        idempotent: declared.idempotencyKey !== undefined,
      },
    );
    return body.data;
  }

  /** Fresh presigned URLs for some parts (the URLs live 15 minutes). */
  async signParts(uploadId: string, partNumbers: number[]): Promise<PresignedPart[]> {
    const body = await this.api.request<Schemas["SignedPartsData"]>(
      "POST",
      `/uploads/multipart/${uploadId}/parts`,
      { json: { partNumbers }, idempotent: true }, // it only signs URLs
    );
    return body.data.parts;
  }

  /** The parts the store holds for an active session, in part order. */
  async parts(uploadId: string): Promise<HeldPart[]> {
    const path = `/uploads/multipart/${uploadId}/parts`;
    return (await this.api.request<Schemas["HeldPartsData"]>("GET", path)).data.parts;
  }

  /** Assemble the parts (every part once); the file becomes `uploaded`. With `fileId`, a
   * retry whose first attempt succeeded (its answer lost) resolves to that file. */
  async complete(
    uploadId: string,
    parts: CompletedPart[],
    options: { fileId?: string } = {},
  ): Promise<StoredFile> {
    const sorted = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    const json = { parts: sorted.map(({ partNumber, etag }) => ({ partNumber, etag })) };
    try {
      return await this.api.request<StoredFile>(
        "POST",
        `/uploads/multipart/${uploadId}/complete`,
        { json, idempotent: true },
      );
    } catch (error) {
      const lost = error instanceof ConflictError && error.code === "UPLOAD_NOT_ACTIVE";
      if (!lost || !options.fileId) throw error;
      const current = await this.client.files.get(options.fileId);
      if (current.status !== "uploaded") throw error;
      return current;
    }
  }

  /** Abort a session (the store drops its parts; the file becomes `failed`). */
  async abort(uploadId: string): Promise<void> {
    await this.api.request("DELETE", `/uploads/multipart/${uploadId}`);
  }

  /** Finish an interrupted multipart upload from the same source: keeps the parts the store
   * holds whose size matches, sends the others, completes. */
  async resume(
    uploadId: string,
    source: UploadSource,
    options: { onProgress?: OnProgress; signal?: AbortSignal } = {},
  ): Promise<StoredFile> {
    const src = await openSource(source);
    try {
      return await this.transfer(uploadId, src, null, options);
    } finally {
      await src.close();
    }
  }

  /** @internal Send the parts (a new session's all, a resumed one's missing), complete.
   * Whatever interrupts it leaves the session active and names it in `uploadId`. */
  async transfer(
    uploadId: string,
    src: OpenedSource,
    session: MultipartSession | null,
    options: { onProgress?: OnProgress; signal?: AbortSignal },
  ): Promise<StoredFile> {
    try {
      const plan = session ?? planParts(src.size);
      const completed: CompletedPart[] = [];
      if (session === null) {
        for (const held of await this.parts(uploadId)) {
          const n = held.partNumber;
          const offset = plan.partSize * (n - 1);
          const expected = n === plan.partCount ? src.size - offset : plan.partSize;
          if (n > plan.partCount || held.size !== expected) continue; // sent again
          // Other bytes than the source's (a single-part ETag is the part's MD5): sent again.
          if (await differs(held.etag, () => src.read(offset, expected))) continue;
          completed.push(held);
        }
      }
      const parts = await sendParts(src, plan, {
        concurrency: this.client.settings.concurrency,
        retries: this.client.settings.partRetries,
        onProgress: options.onProgress,
        signal: options.signal,
        completed,
        signMore: (numbers) => this.signParts(uploadId, numbers),
      });
      return await this.complete(uploadId, parts, { fileId: session?.fileId });
    } catch (error) {
      if (error instanceof StorageError) {
        if (!SESSION_ENDED.has(error.code)) error.uploadId = uploadId;
        throw error;
      }
      const wrapped = new TransferError(`upload ${uploadId}: ${describe(error)}`, { cause: error });
      wrapped.uploadId = uploadId;
      throw wrapped;
    }
  }
}

// The specifier in a variable: bundlers for browsers leave this Node-only import alone.
const NODE_HASHES = "node:crypto";

/** Whether a held part's ETag shows bytes other than `read()`'s. Only where the ETag is an MD5
 * and Node's crypto is there (Web Crypto has no MD5); otherwise the size check stands. */
async function differs(etag: string, read: () => Promise<Blob | Uint8Array>): Promise<boolean> {
  if (!/^[0-9a-f]{32}$/i.test(etag)) return false;
  let crypto: { createHash(name: string): { update(data: Uint8Array): { digest(encoding: "hex"): string } } };
  try {
    crypto = await import(NODE_HASHES);
  } catch {
    return false;
  }
  const bytes = await read();
  const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(await bytes.arrayBuffer());
  return crypto.createHash("md5").update(data).digest("hex") !== etag.toLowerCase();
}

export interface TransformOptions {
  width?: number;
  height?: number;
  fit?: "cover" | "contain" | "fill" | "inside" | "outside";
  format?: "webp" | "jpeg" | "png" | "avif";
  quality?: number;
}

export class Variants extends Resource {
  /** Ask for a resized copy (made by a worker). With `wait`, resolve once it is `ready`. */
  async create(
    fileId: string,
    params: TransformOptions,
    options: { wait?: boolean; timeoutMs?: number } = {},
  ): Promise<Variant> {
    const path = `/files/${fileId}/transform`;
    const variant = (await this.api.request<Schemas["VariantData"]>("POST", path, { json: params }))
      .data;
    return options.wait ? this.wait(fileId, variant.id, options) : variant;
  }

  /** Poll until the variant is `ready` (VariantFailedError if it fails, WaitTimeoutError
   * after `timeoutMs`, default 60 000). */
  async wait(fileId: string, variantId: string, options: { timeoutMs?: number } = {}): Promise<Variant> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    let delay = 0.2;
    for (;;) {
      let variant: Variant | undefined;
      for await (const each of this.list(fileId)) if (each.id === variantId) variant = each;
      if (!variant) throw new StorageError(`variant ${variantId} is not among file ${fileId}'s`);
      if (variant.status === "ready") return variant;
      if (variant.status === "failed") {
        const reason = variant.failureReason ?? "no reason";
        throw new VariantFailedError(`variant ${variant.label} failed: ${reason}`, {
          code: "VARIANT_FAILED",
        });
      }
      if (Date.now() + delay * 1000 > deadline) {
        throw new WaitTimeoutError(`variant ${variant.label} still ${variant.status}`, {
          code: "WAIT_TIMEOUT",
        });
      }
      await sleep(delay);
      delay = Math.min(2, delay * 1.5);
    }
  }

  /** Every variant of every version of the file, oldest first. */
  list(fileId: string): AsyncGenerator<Variant> {
    return this.api.pages<Variant>(`/files/${fileId}/variants`);
  }

  async downloadUrl(fileId: string, variantId: string): Promise<DownloadUrl> {
    const path = `/files/${fileId}/variants/${variantId}/download-url`;
    return this.api.request<DownloadUrl>("POST", path, { json: {} });
  }

  /** A `ready` variant's bytes. */
  async download(fileId: string, variantId: string): Promise<Uint8Array> {
    const { url } = await this.downloadUrl(fileId, variantId);
    return fetchBytes(url, this.client.settings.partRetries);
  }
}
