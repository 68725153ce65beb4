/** `client.files`: upload, list, change, download and delete files. */
import { signedOptions, type DeliveryUrlOptions } from "./delivery.js";
import { ConflictError } from "./errors.js";
import { type Declared, declaredBody, fetchBytes, isoOrNull, keyHeader, newKey, Resource } from "./resource.js";
import { guessContentType, openSource, type UploadSource } from "./source.js";
import { type OnProgress, putSingle } from "./transfer.js";
import type { DownloadUrl, Schemas, StoredFile, UploadDescriptor } from "./types.js";

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
