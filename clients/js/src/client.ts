/**
 * `new StorageClient({ apiKey, baseUrl })`, its settings and its resources: files, folders,
 * jobs, uploads, variants, webhooks, events, upload tokens (each in a module of its own). For
 * servers (Node 18+): the API key must never reach a browser; pages upload with
 * `storage-service-client/browser`.
 */
import { DELIVERY_KEY_ENV, DeliveryKey } from "./delivery.js";
import { ConfigurationError } from "./errors.js";
import { Files } from "./files.js";
import { Folders } from "./folders.js";
import { Api } from "./http.js";
import { Jobs } from "./jobs.js";
import type { Me, Schemas } from "./types.js";
import { UploadTokens } from "./uploadtokens.js";
import { Uploads } from "./uploads.js";
import { Variants } from "./variants.js";
import { Events, Webhooks } from "./webhooks.js";

export { type BatchOperation, Files, type ListOptions, type UploadOptions } from "./files.js";
export { Folders, type WaitOptions } from "./folders.js";
export { Jobs } from "./jobs.js";
export type { Declared } from "./resource.js";
export { planParts, Uploads } from "./uploads.js";
export { type TransformOptions, Variants } from "./variants.js";

const MIB = 1024 * 1024;
export const API_KEY_ENV = "STORAGE_API_KEY";
export const BASE_URL_ENV = "STORAGE_BASE_URL";

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
