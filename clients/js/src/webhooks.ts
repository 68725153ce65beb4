/**
 * Webhooks: verifying a delivery's signature (`verifyWebhook`), and managing endpoints.
 */
import { webCrypto } from "./crypto.js";
import { SignatureError } from "./errors.js";
import type { Api } from "./http.js";
import type { Delivery, Schemas, Webhook, WebhookEvent } from "./types.js";

export const SIGNATURE_HEADER = "SERVICE-Signature";
const DEFAULT_TOLERANCE_SECONDS = 300;

export interface VerifyOptions {
  /** Refuse a timestamp further than this from the clock (default 300; 0 turns it off). */
  toleranceSeconds?: number;
}

/**
 * Check a delivery's `SERVICE-Signature` header and resolve to its event (the parsed body).
 *
 * `rawBody` must be the request's body exactly as received, before any JSON parsing. The
 * header is `t=<unix seconds>,v1=<hex HMAC-SHA256>`; the signature is over `<t>.<rawBody>`.
 * Any of several `v1` values may match any of several secrets (a rotation's overlap). Web
 * Crypto's HMAC verify compares in constant time. Rejects with SignatureError:
 * `SIGNATURE_MALFORMED`, `SIGNATURE_EXPIRED` (a replay), `SIGNATURE_MISMATCH`,
 * `INVALID_PAYLOAD`.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  header: string | null | undefined,
  secrets: string | string[],
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const body =
    typeof rawBody === "string"
      ? new TextEncoder().encode(rawBody)
      : rawBody instanceof Uint8Array
        ? rawBody
        : new Uint8Array(rawBody);
  let timestamp: number | null = null;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const item of (header ?? "").split(",")) {
    const [key, value = ""] = item.trim().split("=", 2);
    if (key === "t" && /^\d+$/.test(value)) timestamp = Number(value);
    const hex = value.trim().toLowerCase();
    if (key === "v1" && /^([0-9a-f]{2})+$/.test(hex)) {
      signatures.push(new Uint8Array(hex.match(/../g)!.map((byte) => parseInt(byte, 16))));
    }
  }
  if (timestamp === null || signatures.length === 0) {
    throw new SignatureError(
      `malformed ${SIGNATURE_HEADER} header (expected t=<seconds>,v1=<hex>)`,
      { code: "SIGNATURE_MALFORMED" },
    );
  }
  if (tolerance > 0 && Math.abs(Date.now() / 1000 - timestamp) > tolerance) {
    throw new SignatureError(
      `the signature's timestamp is more than ${tolerance} s from now (a replay?)`,
      { code: "SIGNATURE_EXPIRED" },
    );
  }
  const prefix = new TextEncoder().encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.byteLength + body.byteLength);
  signed.set(prefix);
  signed.set(body, prefix.byteLength);
  const crypto = (await webCrypto()).subtle;
  let matched = false;
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const key = await crypto.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["verify"],
    );
    for (const signature of signatures) {
      // Every pair is checked (no early exit), so the time taken tells nothing either.
      if (await crypto.verify("HMAC", key, signature, signed)) matched = true;
    }
  }
  if (!matched) {
    throw new SignatureError("no signature matches this payload and secret", {
      code: "SIGNATURE_MISMATCH",
    });
  }
  let event: unknown;
  try {
    event = JSON.parse(new TextDecoder().decode(body));
  } catch (cause) {
    throw new SignatureError("the payload is not JSON", { code: "INVALID_PAYLOAD", cause });
  }
  if (!event || typeof event !== "object" || Array.isArray(event)) {
    throw new SignatureError("the payload is not an event object", { code: "INVALID_PAYLOAD" });
  }
  return event as WebhookEvent;
}

const iso = (when: string | Date): string => (when instanceof Date ? when.toISOString() : when);

/** The events of the key's mode, exactly as webhooks receive them, for the retention window. */
export class Events {
  constructor(private readonly api: Api) {}

  /** Newest first, every page: `for await (const event of client.events.list({ type }))`. */
  list(options: { type?: WebhookEvent["type"]; limit?: number } = {}): AsyncGenerator<WebhookEvent> {
    return this.api.pages<WebhookEvent>("/events", options);
  }

  async get(eventId: string): Promise<WebhookEvent> {
    return (await this.api.request<Schemas["EventEnvelopeData"]>("GET", `/events/${eventId}`)).data;
  }
}

/** The project's webhook endpoints and their delivery logs. */
export class Webhooks {
  constructor(private readonly api: Api) {}

  /** Register an endpoint; resolves to it and its signing secret (`whsec_…`), which the
   * service never shows again. Without `events`, every event type is sent. */
  async create(options: {
    url: string;
    events?: Webhook["events"];
  }): Promise<{ webhook: Webhook; secret: string }> {
    const body = await this.api.request<Schemas["WebhookCreatedData"]>("POST", "/webhooks", {
      json: options.events ? { url: options.url, events: options.events } : { url: options.url },
    });
    return body.data;
  }

  async list(): Promise<Webhook[]> {
    const body = await this.api.request<Schemas["WebhookListData"]>("GET", "/webhooks");
    return body.data;
  }

  async get(webhookId: string): Promise<Webhook> {
    return (await this.api.request<Schemas["WebhookData"]>("GET", `/webhooks/${webhookId}`))
      .data;
  }

  async delete(webhookId: string): Promise<void> {
    await this.api.request("DELETE", `/webhooks/${webhookId}`);
  }

  /** Turn a disabled endpoint on again. */
  async enable(webhookId: string): Promise<Webhook> {
    const path = `/webhooks/${webhookId}/enable`;
    return (await this.api.request<Schemas["WebhookData"]>("POST", path)).data;
  }

  /** The endpoint's deliveries, newest first, every page. */
  deliveries(webhookId: string, options: { limit?: number } = {}): AsyncGenerator<Delivery> {
    return this.api.pages<Delivery>(`/webhooks/${webhookId}/deliveries`, {
      limit: options.limit,
    });
  }

  /** A new delivery, attempted at once, of every retained event from `since` (to `until`)
   * that the endpoint subscribes to; resolves to how many. Timestamps: ISO 8601 or Date. */
  async replay(
    webhookId: string,
    window: { since: string | Date; until?: string | Date },
  ): Promise<{ deliveries: number }> {
    const json: Record<string, string> = { since: iso(window.since) };
    if (window.until !== undefined) json.until = iso(window.until);
    const path = `/webhooks/${webhookId}/replay`;
    return (await this.api.request<Schemas["ReplayData"]>("POST", path, { json })).data;
  }

  /** A new signing secret, shown this once. Until `overlapSeconds` (default 86 400) pass,
   * deliveries are signed with both: verify with `[newSecret, oldSecret]` meanwhile. */
  async rotateSecret(
    webhookId: string,
    options: { overlapSeconds?: number } = {},
  ): Promise<{ webhook: Webhook; secret: string }> {
    const path = `/webhooks/${webhookId}/rotate-secret`;
    return (await this.api.request<Schemas["WebhookCreatedData"]>("POST", path, { json: options }))
      .data;
  }

  /** Send a FAILED or PENDING delivery again now. */
  async redeliver(webhookId: string, deliveryId: string): Promise<Delivery> {
    const path = `/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver`;
    return (await this.api.request<Schemas["DeliveryData"]>("POST", path)).data;
  }
}
