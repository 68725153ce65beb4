/**
 * HTTP to the API: the bearer key, retries (429 and 503 after `Retry-After`, lost
 * connections where the request is safe to send again), and errors as classes.
 *
 * The key goes only to the API; presigned URLs carry their own signature (transfer.ts).
 */
import {
  NetworkError,
  RateLimitedError,
  ServiceUnavailableError,
  StorageError,
  errorClass,
} from "./errors.js";

export const VERSION = "0.1.0";

type Query = Record<string, string | number | boolean | null | undefined>;

export interface RequestOptions {
  json?: unknown;
  query?: Query;
  headers?: Record<string, string>;
  /** Whether a request that may have reached the server can be sent again (default: GET). */
  idempotent?: boolean;
}

export interface Page<T> {
  data: T[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

/** Exponential backoff with jitter: about 0.5, 1, 2, 4, 8 s (each 50-100% of that). */
export function backoff(attempt: number): number {
  return Math.min(8, 0.5 * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/** `Retry-After` in seconds (a number or an HTTP date), or null. */
export function retryAfter(headers: Headers): number | null {
  const value = headers.get("Retry-After");
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

export const sleep = (seconds: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** The error for an API answer that is not 2xx. */
export async function apiError(response: Response): Promise<StorageError> {
  let code = "";
  let message = response.statusText || `HTTP ${response.status}`;
  let details: Record<string, unknown> = {};
  try {
    const body = (await response.json()) as { error?: Record<string, unknown> };
    const error = body?.error;
    if (error && typeof error === "object") {
      code = String(error.code ?? "");
      message = String(error.message ?? message);
      if (error.details && typeof error.details === "object") {
        details = error.details as Record<string, unknown>;
      }
    }
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const ErrorClass = errorClass(response.status);
  const error = new ErrorClass(message, {
    status: response.status,
    code,
    details,
    requestId: response.headers.get("X-Request-Id"),
  });
  if (error instanceof RateLimitedError || error instanceof ServiceUnavailableError) {
    error.retryAfter = retryAfter(response.headers);
  }
  return error;
}

export interface ApiOptions {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
  maxRetries: number;
  maxRetryWaitSeconds: number;
  fetch: typeof fetch;
}

/** Requests to the API under `<baseUrl>/v1`. */
export class Api {
  constructor(readonly options: ApiOptions) {}

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const { maxRetries, maxRetryWaitSeconds, timeoutMs } = this.options;
    const idempotent = options.idempotent ?? (method === "GET" || method === "HEAD");
    const url = new URL(`${this.options.baseUrl}/v1${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.options.apiKey}`,
      Accept: "application/json",
      ...options.headers,
    };
    if (options.json !== undefined) headers["Content-Type"] = "application/json";
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.options.fetch(url, {
          method,
          headers,
          body: options.json === undefined ? undefined : JSON.stringify(options.json),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (cause) {
        // A refused connection never reached the server: safe to send again for any method.
        if (attempt < maxRetries && (idempotent || refused(cause))) {
          await sleep(backoff(attempt));
          continue;
        }
        throw new NetworkError(`${method} ${path}: ${describe(cause)}`, { cause });
      }
      if ((response.status === 429 || response.status === 503) && attempt < maxRetries) {
        const wait = retryAfter(response.headers) ?? backoff(attempt);
        if (wait <= maxRetryWaitSeconds) {
          await response.body?.cancel();
          await sleep(wait);
          continue;
        }
      }
      if (!response.ok) throw await apiError(response);
      const text = await response.text();
      return (text ? JSON.parse(text) : null) as T;
    }
  }

  /** Every item of a list, following `pagination.nextCursor` page after page. */
  async *pages<T>(path: string, query: Query = {}): AsyncGenerator<T, void, undefined> {
    const params: Query = { ...query };
    for (;;) {
      const page = await this.request<Page<T>>("GET", path, { query: params });
      yield* page.data;
      const { hasMore, nextCursor } = page.pagination ?? {};
      if (!hasMore || !nextCursor) return;
      params.cursor = nextCursor;
    }
  }
}

function refused(cause: unknown): boolean {
  const code = (cause as { cause?: { code?: string } })?.cause?.code;
  return code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN";
}

/** A one-line description of a network failure. */
export function describe(cause: unknown): string {
  const error = cause as { message?: string; cause?: { message?: string; code?: string } };
  const inner = error?.cause?.code ?? error?.cause?.message;
  const text = error?.message ?? String(cause);
  return inner ? `${text} (${inner})` : text;
}
