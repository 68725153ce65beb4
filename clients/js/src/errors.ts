/**
 * Every error the client throws: one base class, one subclass per HTTP status family.
 *
 * The API answers every error as `{"error": {"code", "message", "details"}}` with an
 * `X-Request-Id` header; each error carries those, so a log line can be matched with the
 * service's own logs.
 */

export interface ErrorInit {
  status?: number | null;
  code?: string;
  details?: Record<string, unknown>;
  requestId?: string | null;
  cause?: unknown;
}

/** The base class of every error of the client. */
export class StorageError extends Error {
  /** The HTTP status (null when no answer came: a connection error). */
  readonly status: number | null;
  /** The API's error code (`FILE_NOT_FOUND`...), or the store's (`SignatureDoesNotMatch`). */
  readonly code: string;
  readonly details: Record<string, unknown>;
  /** The answer's `X-Request-Id`. */
  readonly requestId: string | null;
  /** Set on errors that interrupt a multipart upload: the session is left active, so
   * `client.uploads.resume(uploadId, source)` can finish it. */
  uploadId: string | null = null;

  constructor(message: string, init: ErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status ?? null;
    this.code = init.code ?? "";
    this.details = init.details ?? {};
    this.requestId = init.requestId ?? null;
  }
}

/** 400 (and 415): refused as invalid; `details` names each bad field. */
export class ValidationError extends StorageError {}
/** 401: the API key is missing, malformed, unknown or revoked. */
export class AuthenticationError extends StorageError {}
/** 403: refused (a limit, a scope), or a store refused a PUT (a signature mismatch). */
export class PermissionDeniedError extends StorageError {}
/** 404: no such file, upload, variant, webhook or delivery in this project. */
export class NotFoundError extends StorageError {}
/** 409: the resource is not in a state that allows this (`FILE_NOT_PENDING`...). */
export class ConflictError extends StorageError {}
/** 413: the file is larger than the service accepts. */
export class PayloadTooLargeError extends StorageError {}
/** 422: the file cannot be processed (a transform of a non-image). */
export class UnprocessableError extends StorageError {}
/** 429: the key spent its budget; `retryAfter` is in seconds. */
export class RateLimitedError extends StorageError {
  retryAfter: number | null = null;
}
/** 503: the service or its store did not answer; nothing changed, retry later. */
export class ServiceUnavailableError extends StorageError {
  retryAfter: number | null = null;
}
/** Any other 5xx: a bug of the service (`requestId` finds it in its logs). */
export class ServerError extends StorageError {}
/** No answer: the service or the store could not be reached, or the connection broke. */
export class NetworkError extends StorageError {}
/** Bytes could not be sent to or read from the store (after every retry). */
export class TransferError extends StorageError {}
/** `signal.abort()` stopped a transfer. `completedParts` are the parts already in the store:
 * pass them back as `completed` to send only the others. */
export class AbortError extends StorageError {
  completedParts: CompletedPart[] = [];
  constructor(message = "the upload was aborted", init: ErrorInit = {}) {
    super(message, { code: "ABORTED", ...init });
    this.name = "AbortError";
  }
}
/** A webhook request is not a valid, fresh delivery signed with the secret. */
export class SignatureError extends StorageError {}
/** A variant waited for ended `failed`. */
export class VariantFailedError extends StorageError {}
/** A job waited for ended `failed`; `job` is it, `code` its error's. */
export class JobFailedError extends StorageError {
  readonly job: unknown;
  constructor(message: string, init: ErrorInit & { job?: unknown } = {}) {
    super(message, init);
    this.job = init.job;
  }
}
/** A wait (for a variant to be ready) ran out of time. */
export class WaitTimeoutError extends StorageError {}
/** No API key or base URL was given, as options or in the environment. */
export class ConfigurationError extends StorageError {}

/** A part the store holds, as multipart complete takes it. */
export interface CompletedPart {
  partNumber: number;
  etag: string;
}

const BY_STATUS: Record<number, typeof StorageError> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: ValidationError,
  422: UnprocessableError,
  429: RateLimitedError,
  503: ServiceUnavailableError,
};

/** The error class of an HTTP status. */
export function errorClass(status: number): typeof StorageError {
  return BY_STATUS[status] ?? (status >= 500 ? ServerError : StorageError);
}
