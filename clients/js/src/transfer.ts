/**
 * Bytes to and from the store through presigned URLs, in Node and in browsers: one PUT, and
 * many parts in parallel. Nothing here carries the API key: a URL's signature is its
 * authority, so this module is what a browser page runs.
 */
import {
  AbortError,
  type CompletedPart,
  NetworkError,
  StorageError,
  TransferError,
} from "./errors.js";
import { backoff, describe, sleep } from "./http.js";
import type { Schemas } from "./types.js";

export interface Progress {
  /** Bytes sent so far (of every part, counted once). */
  loaded: number;
  total: number;
}
export type OnProgress = (progress: Progress) => void;

/** Bytes the transfer reads a slice at a time: a Blob's, a buffer's, a file's on disk. */
export interface ByteSource {
  size: number;
  read(offset: number, length: number): Promise<Blob | Uint8Array>;
}

/** What a PUT's body may be, as both fetch and XMLHttpRequest take it. */
type Body = Blob | Uint8Array;

// Headers a browser sets itself (and refuses from a page); the signature covers them anyway.
const SET_BY_RUNTIME = new Set(["content-length", "host"]);

interface PutOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Bytes of this body sent so far (browsers report it as it goes; fetch only at the end). */
  onSent?: (sent: number) => void;
  timeoutMs?: number;
}

/** One PUT of a body to a presigned URL. Resolves to the part's ETag (unquoted). Throws
 * TransferError with the store's own code and message when the store refuses it. */
export async function put(url: string, body: Body, options: PutOptions = {}): Promise<string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (!SET_BY_RUNTIME.has(name.toLowerCase())) headers[name] = value;
  }
  const size = body instanceof Uint8Array ? body.byteLength : body.size;
  const answer =
    typeof XMLHttpRequest === "function"
      ? await putWithXhr(url, body, headers, options)
      : await putWithFetch(url, body, headers, options);
  if (answer.status < 200 || answer.status > 299) throw storeError(answer.status, answer.text);
  options.onSent?.(size);
  const etag = answer.etag?.trim().replace(/^"|"$/g, "");
  if (!etag) {
    throw new TransferError(
      "the store's answer has no readable ETag header: its CORS rule must expose ETag",
      { status: answer.status, code: "ETAG_NOT_EXPOSED" },
    );
  }
  return etag;
}

interface Answer {
  status: number;
  etag: string | null;
  text: string;
}

async function putWithFetch(
  url: string,
  body: Body,
  headers: Record<string, string>,
  options: PutOptions,
): Promise<Answer> {
  const signals = [AbortSignal.timeout(options.timeoutMs ?? 600_000)];
  if (options.signal) signals.push(options.signal);
  let response: Response;
  try {
    response = await fetch(url, {
      method: "PUT",
      headers,
      body: body as BodyInit,
      signal: anySignal(signals),
    });
  } catch (cause) {
    if (options.signal?.aborted) throw new AbortError();
    throw new NetworkError(`PUT to the store: ${describe(cause)}`, { cause });
  }
  const text = response.ok ? "" : await response.text();
  return { status: response.status, etag: response.headers.get("ETag"), text };
}

// XMLHttpRequest where there is one (browsers): it reports upload progress, fetch does not.
function putWithXhr(
  url: string,
  body: Body,
  headers: Record<string, string>,
  options: PutOptions,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const onAbort = () => xhr.abort();
    const settle = () => options.signal?.removeEventListener("abort", onAbort);
    xhr.open("PUT", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.timeout = options.timeoutMs ?? 600_000;
    // Only when someone counts: a listener has Chromium report progress to the page as it goes.
    const onSent = options.onSent;
    if (onSent) xhr.upload.onprogress = (event) => onSent(event.loaded);
    xhr.onload = () => {
      settle();
      resolve({ status: xhr.status, etag: xhr.getResponseHeader("ETag"), text: xhr.responseText });
    };
    xhr.onerror = xhr.ontimeout = () => {
      settle();
      // A CORS refusal looks the same as a lost connection to a page: status 0, no body.
      reject(new NetworkError("PUT to the store failed (the network, or the store's CORS rule)"));
    };
    xhr.onabort = () => {
      settle();
      reject(new AbortError());
    };
    if (options.signal?.aborted) return reject(new AbortError());
    options.signal?.addEventListener("abort", onAbort);
    xhr.send(body as XMLHttpRequestBodyInit);
  });
}

function anySignal(signals: AbortSignal[]): AbortSignal {
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(signals);
  const controller = new AbortController(); // Node before 18.17 has no AbortSignal.any
  for (const signal of signals) {
    if (signal.aborted) controller.abort(signal.reason);
    signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

/** The store's refusal: its XML error's Code and Message (S3's form), or the status. */
export function storeError(status: number, text: string): TransferError {
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? "";
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? `HTTP ${status}`;
  return new TransferError(`the store refused the PUT: ${code ? `${code}: ` : ""}${message}`, {
    status,
    code,
  });
}

/** Worth sending again: no answer, or the store's own failure. */
function retryable(error: unknown): boolean {
  if (error instanceof AbortError) return false;
  if (error instanceof NetworkError) return true;
  return error instanceof TransferError && (error.status ?? 0) >= 500;
}

/** The session of a multipart upload, as `POST /v1/uploads/multipart` answers it. */
export type MultipartSession = Schemas["MultipartSession"];
export type PresignedPart = Schemas["PresignedPart"];

export interface PartsOptions {
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  onProgress?: OnProgress;
  signal?: AbortSignal;
  /** Fresh URLs for parts whose URL expired (or the store refused as expired): the
   * application's server answers them with `client.uploads.signParts(id, partNumbers)`. */
  signMore?: (partNumbers: number[]) => Promise<PresignedPart[]>;
  /** Parts already in the store (an earlier call's `AbortError.completedParts`, or the
   * server's `client.uploads.parts(id)`): not sent again. */
  completed?: CompletedPart[];
  /** Attempts per part after the first (default 5). */
  retries?: number;
}

type SessionLike = Pick<MultipartSession, "partSize" | "partCount" | "size"> & {
  parts?: PresignedPart[];
};

// A URL this close to its expiry is signed again before use.
const EXPIRY_MARGIN_MS = 60_000;

/** Send every part not yet `completed`, `concurrency` at a time; resolve to all the parts
 * (number and ETag, in order) for multipart complete. Each part is retried on its own; an
 * expired URL is signed again through `signMore`. */
export async function sendParts(
  source: ByteSource,
  session: SessionLike,
  options: PartsOptions = {},
): Promise<CompletedPart[]> {
  const { partSize, partCount, size } = session;
  if (source.size !== size) {
    throw new TransferError(`the source has ${source.size} bytes, the upload declared ${size}`);
  }
  const retries = options.retries ?? 5;
  const urls = new Map<number, PresignedPart>();
  for (const part of session.parts ?? []) urls.set(part.partNumber, part);
  const done = new Map<number, string>();
  for (const part of options.completed ?? []) done.set(part.partNumber, part.etag);
  const length = (n: number) => (n === partCount ? size - partSize * (partCount - 1) : partSize);
  const todo: number[] = [];
  for (let n = 1; n <= partCount; n++) if (!done.has(n)) todo.push(n);

  // Progress: the parts done, plus what each part in flight has sent so far.
  const inFlight = new Map<number, number>();
  let doneBytes = 0;
  for (const n of done.keys()) doneBytes += length(n);
  let reported = -1;
  const report = () => {
    let loaded = doneBytes;
    for (const sent of inFlight.values()) loaded += sent;
    if (loaded !== reported) {
      reported = loaded;
      options.onProgress?.({ loaded, total: size });
    }
  };
  report();

  const urlFor = async (n: number, refresh: boolean): Promise<string> => {
    const known = urls.get(n);
    if (!refresh && known && Date.parse(known.expiresAt) - Date.now() > EXPIRY_MARGIN_MS) {
      return known.url;
    }
    if (!options.signMore) {
      if (known && !refresh) return known.url;
      throw new TransferError(`no URL for part ${n}: pass signMore to sign parts again`);
    }
    // Sign this part and the next waiting ones in one request.
    const batch = [n, ...todo.slice(0, 99)];
    for (const part of await options.signMore(batch)) urls.set(part.partNumber, part);
    const signed = urls.get(n);
    if (!signed) throw new TransferError(`signMore answered no URL for part ${n}`);
    return signed.url;
  };

  const sendOne = async (n: number): Promise<void> => {
    const bytes = await source.read(partSize * (n - 1), length(n));
    let refresh = false;
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) throw new AbortError();
      try {
        const url = await urlFor(n, refresh);
        const etag = await put(url, bytes, {
          signal: options.signal,
          onSent: options.onProgress
            ? (sent) => {
                inFlight.set(n, sent);
                report();
              }
            : undefined,
        });
        inFlight.delete(n);
        done.set(n, etag);
        doneBytes += length(n);
        report();
        return;
      } catch (error) {
        inFlight.delete(n);
        // A 403 on a part is an expired (or revoked) URL: sign it again once.
        const expired = error instanceof TransferError && error.status === 403;
        if (expired && !refresh && options.signMore) {
          refresh = true;
          continue;
        }
        if (attempt >= retries || !retryable(error)) throw error;
        await sleep(backoff(attempt));
      }
    }
  };

  let failure: unknown = null;
  const worker = async () => {
    while (failure === null) {
      const n = todo.shift();
      if (n === undefined) return;
      try {
        await sendOne(n);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency ?? 4, todo.length || 1));
  await Promise.all(Array.from({ length: workers }, worker));
  const completed = [...done].sort(([a], [b]) => a - b).map(([partNumber, etag]) => ({
    partNumber,
    etag,
  }));
  if (failure !== null) {
    if (failure instanceof AbortError || options.signal?.aborted) {
      const aborted = new AbortError();
      aborted.completedParts = completed;
      throw aborted;
    }
    if (failure instanceof StorageError) throw failure;
    throw new TransferError(`reading the source failed: ${describe(failure)}`, {
      cause: failure,
    });
  }
  return completed;
}

/** A Blob or bytes in memory as a ByteSource. */
export function memorySource(data: Blob | Uint8Array): ByteSource {
  if (data instanceof Uint8Array) {
    return {
      size: data.byteLength,
      read: async (offset, length) => data.subarray(offset, offset + length),
    };
  }
  // A part goes to the request as a Blob: the browser streams it from its blob store to the
  // network, where reading it into the page first would add a copy through the renderer. A
  // part that is the whole Blob goes as it is: a File picked from disk then goes as a file,
  // which Chromium's network service reads itself, sparing the browser process its reads.
  return {
    size: data.size,
    read: async (offset, length) =>
      offset === 0 && length === data.size ? data : data.slice(offset, offset + length),
  };
}

export interface SingleOptions {
  onProgress?: OnProgress;
  signal?: AbortSignal;
  /** Attempts after the first (default 5). */
  retries?: number;
}

/** PUT a whole body to an upload descriptor (its URL and the exact headers it signs). */
export async function putSingle(
  body: Blob | Uint8Array,
  descriptor: Pick<UploadDescriptor, "url" | "headers">,
  options: SingleOptions = {},
): Promise<void> {
  const total = body instanceof Uint8Array ? body.byteLength : body.size;
  const retries = options.retries ?? 5;
  options.onProgress?.({ loaded: 0, total });
  for (let attempt = 0; ; attempt++) {
    try {
      await put(descriptor.url, body, {
        headers: descriptor.headers,
        signal: options.signal,
        onSent: (loaded) => options.onProgress?.({ loaded, total }),
      });
      return;
    } catch (error) {
      // If-None-Match: * refuses a second PUT: an earlier attempt's bytes arrived (its answer
      // was lost). Complete checks them.
      if (attempt > 0 && error instanceof TransferError && error.status === 412) {
        options.onProgress?.({ loaded: total, total });
        return;
      }
      if (attempt >= retries || !retryable(error)) throw error;
      await sleep(backoff(attempt));
    }
  }
}

type UploadDescriptor = Schemas["UploadDescriptor"];
