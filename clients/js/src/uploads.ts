/** `client.uploads`: multipart sessions, sending their parts in parallel and resuming an
 * interrupted one. */
import { type CompletedPart, ConflictError, StorageError, TransferError } from "./errors.js";
import { describe } from "./http.js";
import { type Declared, declaredBody, keyHeader, Resource } from "./resource.js";
import { type OpenedSource, openSource, type UploadSource } from "./source.js";
import { type MultipartSession, type OnProgress, type PresignedPart, sendParts } from "./transfer.js";
import type { HeldPart, Schemas, StoredFile } from "./types.js";

const MIB = 1024 * 1024;
const MIN_PART_SIZE = 8 * MIB;
const MAX_PARTS = 10_000;


// A multipart complete that fails with one of these has ended the session (or it was never
// open): there is nothing to resume, so the error carries no upload id.
const SESSION_ENDED = new Set(["CONTENT_TYPE_MISMATCH", "UPLOAD_NOT_ACTIVE", "FILE_NOT_PENDING"]);
/** The part size and count the service chooses for a size (for a resume). */
export function planParts(size: number): { partSize: number; partCount: number; size: number } {
  const perPart = Math.ceil(size / MAX_PARTS);
  const partSize = Math.max(MIN_PART_SIZE, Math.ceil(perPart / MIB) * MIB);
  return { size, partSize, partCount: Math.max(1, Math.ceil(size / partSize)) };
}
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
