/**
 * Uploads with an upload token (`ut_…`): the application's server mints the token with its
 * key (`POST /v1/upload-tokens`), hands it to the page, and the page does the rest, start,
 * bytes and complete, with the token alone. The token can do nothing else: no API key ever
 * reaches the browser.
 */
import { webCrypto } from "./crypto.js";
import { AbortError, type CompletedPart, StorageError } from "./errors.js";
import { Api } from "./http.js";
import {
  type MultipartSession,
  type OnProgress,
  type PresignedPart,
  memorySource,
  putSingle,
  sendParts,
} from "./transfer.js";
import type { HeldPart, Schemas, StoredFile, UploadDescriptor } from "./types.js";

const MIB = 1024 * 1024;

/** Where an aborted multipart upload stands: pass it back as `resume` (it survives
 * `JSON.stringify`, so a page may keep it in `localStorage` across a reload). */
export interface TokenUploadResume {
  uploadId: string;
  file: StoredFile;
  partSize: number;
  partCount: number;
  size: number;
}

export interface TokenUploadOptions {
  /** The upload token (`ut_…`) the application's server minted. */
  token: string;
  /** The API's base URL (`https://storage.example`; a trailing `/v1` is accepted). */
  baseUrl: string;
  /** The folder, inside the token's; default: the token's folder. */
  path?: string | null;
  /** Default: the File's name (`blob` for a Blob). */
  filename?: string;
  /** Default: the Blob's type, else `application/octet-stream`. */
  contentType?: string;
  /** Your own keys; the token's metadata is set over them. */
  metadata?: Record<string, unknown>;
  onProgress?: OnProgress;
  signal?: AbortSignal;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  /** Files of this many bytes or more go in parts (default 32 MiB). */
  multipartThreshold?: number;
  /** An earlier call's `TokenUploadAbortError.resume`: sends only the parts not yet held. */
  resume?: TokenUploadResume;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

/** The upload was aborted; `resume`, when it went in parts, continues it with the same
 * token (`uploadWithToken(file, { ...options, resume: error.resume })`). */
export class TokenUploadAbortError extends AbortError {
  resume: TokenUploadResume | null = null;
}

type Started = { file: StoredFile; upload: UploadDescriptor };
type MultipartStarted = { data: { file: StoredFile; upload: MultipartSession } };
type Completed = { data: Schemas["FileCompleted"] };

/** Upload a Blob (a File from `<input type=file>`) with an upload token and resolve to the
 * uploaded file. Below `multipartThreshold` one PUT, otherwise parts `concurrency` at a
 * time. The service's refusals reject with its error classes: `PermissionDeniedError`
 * (`PATH_NOT_ALLOWED`, `UPLOAD_TOKEN_EXHAUSTED`, `ORIGIN_NOT_ALLOWED`),
 * `PayloadTooLargeError` (`FILE_TOO_LARGE`), `UnprocessableError`
 * (`CONTENT_TYPE_NOT_ALLOWED`), `AuthenticationError` (an expired or revoked token). */
export async function uploadWithToken(
  file: Blob,
  options: TokenUploadOptions,
): Promise<StoredFile> {
  const baseUrl = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  const api = new Api({
    apiKey: options.token,
    baseUrl,
    timeoutMs: 60_000,
    maxRetries: 3,
    maxRetryWaitSeconds: 30,
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
  });
  const body = {
    filename: options.filename ?? ((file as { name?: string }).name || "blob"),
    contentType: options.contentType || file.type || "application/octet-stream",
    size: file.size,
    ...(options.path !== undefined ? { path: options.path } : {}),
    ...(options.metadata !== undefined ? { metadata: options.metadata } : {}),
  };
  // A start may be sent again safely: the key makes the service answer the first start.
  const start = { json: body, idempotent: true, headers: { "Idempotency-Key": await randomKey() } };
  if (!options.resume && file.size < (options.multipartThreshold ?? 32 * MIB)) {
    const started = await api.request<Started>("POST", "/files/upload", start);
    try {
      await putSingle(file, started.upload, { onProgress: options.onProgress, signal: options.signal });
    } catch (error) {
      throw aborted(error, null);
    }
    return finish(started.file, await api.request<Completed>("POST", `/files/${started.file.id}/complete`, { json: {} }));
  }

  let resume = options.resume;
  let session: Pick<MultipartSession, "partSize" | "partCount" | "size"> & { parts?: PresignedPart[] };
  let completed: CompletedPart[] = [];
  if (resume) {
    if (resume.size !== file.size) {
      throw new StorageError(`resume is of a ${resume.size}-byte upload; this file has ${file.size}`);
    }
    const held = await api.request<{ data: { parts: HeldPart[] } }>(
      "GET",
      `/uploads/multipart/${resume.uploadId}/parts`,
    );
    const length = (n: number) =>
      n === resume!.partCount ? resume!.size - resume!.partSize * (resume!.partCount - 1) : resume!.partSize;
    completed = held.data.parts
      .filter((part) => part.size === length(part.partNumber))
      .map(({ partNumber, etag }) => ({ partNumber, etag }));
    session = { partSize: resume.partSize, partCount: resume.partCount, size: resume.size };
  } else {
    const started = await api.request<MultipartStarted>("POST", "/uploads/multipart", start);
    const upload = started.data.upload;
    resume = {
      uploadId: upload.id,
      file: started.data.file,
      partSize: upload.partSize,
      partCount: upload.partCount,
      size: upload.size,
    };
    session = upload;
  }
  const uploadId = resume.uploadId;
  let parts: CompletedPart[];
  try {
    parts = await sendParts(memorySource(file), session, {
      concurrency: options.concurrency,
      onProgress: options.onProgress,
      signal: options.signal,
      completed,
      signMore: async (partNumbers) =>
        (
          await api.request<{ data: { parts: PresignedPart[] } }>(
            "POST",
            `/uploads/multipart/${uploadId}/parts`,
            { json: { partNumbers } },
          )
        ).data.parts,
    });
  } catch (error) {
    throw aborted(error, resume);
  }
  const done = await api.request<StoredFile>("POST", `/uploads/multipart/${uploadId}/complete`, {
    json: { parts },
  });
  return done;
}

function finish(started: StoredFile, completed: Completed): StoredFile {
  return { ...started, ...completed.data };
}

function aborted(error: unknown, resume: TokenUploadResume | null): unknown {
  if (!(error instanceof AbortError)) return error;
  const wrapped = new TokenUploadAbortError(error.message);
  wrapped.completedParts = error.completedParts;
  wrapped.resume = resume;
  return wrapped;
}

async function randomKey(): Promise<string> {
  const bytes = new Uint8Array(16);
  (await webCrypto()).getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
