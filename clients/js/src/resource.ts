/** What the client's resources share: their base class, the declaration both ways of
 * starting an upload send, and reading a presigned URL's bytes. */
import type { StorageClient } from "./client.js";
import { webCrypto } from "./crypto.js";
import { StorageError, TransferError } from "./errors.js";
import { type Api, describe, sleep } from "./http.js";

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
export function declaredBody(declared: Declared): Record<string, unknown> {
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

export function isoOrNull(when: string | Date | null): string | null {
  return when instanceof Date ? when.toISOString() : when;
}

export function keyHeader(key: string | undefined): Record<string, string> | undefined {
  return key ? { "Idempotency-Key": key } : undefined;
}

export async function newKey(): Promise<string> {
  const random = new Uint8Array(16);
  (await webCrypto()).getRandomValues(random);
  return `sdk-${Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export class Resource {
  protected readonly api: Api;
  constructor(protected readonly client: StorageClient) {
    this.api = client.api;
  }
}

/** GET a presigned URL's bytes, retrying lost connections and the store's 5xx. */
export async function fetchBytes(url: string, retries: number): Promise<Uint8Array> {
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
