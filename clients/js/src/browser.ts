/**
 * Browser uploads: the page sends the bytes straight to the store through presigned URLs its
 * application's server obtained. No API key ever reaches the browser:
 *
 * 1. the server starts the upload with its key (`client.files.startUpload` or
 *    `client.uploads.create`) and hands the page the descriptor or the session;
 * 2. the page PUTs the bytes (`uploadWithDescriptor` or `uploadParts`);
 * 3. the server completes it (`client.files.complete` or `client.uploads.complete`).
 *
 * Or, with no server in the loop after minting: the server mints an upload token with its
 * key (`POST /v1/upload-tokens`) and the page calls `uploadWithToken(file, { token, baseUrl })`,
 * which starts, sends and completes the upload with the token alone.
 *
 * This module imports nothing that needs Node or a key: `storage-service-client/browser`.
 */
import type { CompletedPart } from "./errors.js";
import {
  type MultipartSession,
  type OnProgress,
  type PartsOptions,
  memorySource,
  putSingle,
  sendParts,
} from "./transfer.js";
import type { UploadDescriptor } from "./types.js";

export interface DescriptorOptions {
  onProgress?: OnProgress;
  signal?: AbortSignal;
}

/** PUT a Blob (a File from an `<input type=file>`) to a single upload's descriptor, with
 * exactly the headers it signs. Resolves once the store holds the bytes; rejects with a
 * TransferError carrying the store's code (`SignatureDoesNotMatch` for another content type
 * or length) or an AbortError. */
export function uploadWithDescriptor(
  blob: Blob,
  descriptor: Pick<UploadDescriptor, "url" | "headers">,
  options: DescriptorOptions = {},
): Promise<void> {
  return putSingle(blob, descriptor, options);
}

/** PUT a Blob's parts to a multipart session's URLs, `concurrency` at a time (default 4).
 * Resolves to every part's number and ETag, for the server's complete. On `signal.abort()`
 * it rejects with an AbortError whose `completedParts` a later call takes as `completed`,
 * to send only the rest. */
export function uploadParts(
  blob: Blob,
  session: Pick<MultipartSession, "partSize" | "partCount" | "size"> & {
    parts?: MultipartSession["parts"];
  },
  options: PartsOptions = {},
): Promise<CompletedPart[]> {
  return sendParts(memorySource(blob), session, options);
}

export {
  AbortError,
  AuthenticationError,
  type CompletedPart,
  NetworkError,
  PayloadTooLargeError,
  PermissionDeniedError,
  StorageError,
  TransferError,
  UnprocessableError,
} from "./errors.js";
export type { MultipartSession, OnProgress, PartsOptions, PresignedPart, Progress } from "./transfer.js";
export type { StoredFile, UploadDescriptor } from "./types.js";
export {
  TokenUploadAbortError,
  type TokenUploadOptions,
  type TokenUploadResume,
  uploadWithToken,
} from "./tokens.js";
