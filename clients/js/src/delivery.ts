/**
 * Delivery URLs signed offline, as the service's guide ("Delivery URLs") specifies them:
 * `{base}/d/{keyId}/{fileId}/{options}/{signature}`, the signature an HMAC-SHA256 keyed with
 * the `dsec_…` secret over `{keyId}/{fileId}/{options}`, base64url without padding.
 */
import { webCrypto } from "./crypto.js";
import { ConfigurationError } from "./errors.js";

export const DELIVERY_KEY_ENV = "STORAGE_DELIVERY_KEY";

/** What a delivery URL shows: the current version, a pinned `version`, or a transform's
 * variant (`format: "auto"` follows the browser's `Accept`). `expiresInSeconds`: 60 to
 * 31536000; absent or null: the URL never expires. */
export interface DeliveryUrlOptions {
  width?: number;
  height?: number;
  fit?: "cover" | "contain" | "fill" | "inside" | "outside";
  format?: "webp" | "jpeg" | "png" | "avif" | "auto";
  quality?: number;
  version?: number;
  expiresInSeconds?: number | null;
}

// The options, in the one order the service accepts.
const ORDER = ["width", "height", "fit", "format", "quality", "version", "expires"] as const;
type Signed = Partial<Record<(typeof ORDER)[number], string | number>>;

export function formatOptions(options: Signed): string {
  const pairs: string[] = [];
  for (const name of ORDER) {
    const value = options[name];
    if (value !== undefined && value !== null) pairs.push(`${name}=${value}`);
  }
  return pairs.join(",") || "-";
}

function base64url(bytes: ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A delivery key and its secret, given as `dk_…:dsec_…`. */
export class DeliveryKey {
  readonly id: string;
  readonly #secret: string;

  constructor(pair: string) {
    const at = pair.indexOf(":");
    const id = pair.slice(0, at).trim();
    const secret = pair.slice(at + 1).trim();
    if (at < 0 || !id.startsWith("dk_") || !secret.startsWith("dsec_")) {
      throw new ConfigurationError("a delivery key is given as dk_…:dsec_…");
    }
    this.id = id;
    this.#secret = secret;
  }

  async sign(fileId: string, options: string): Promise<string> {
    const subtle = (await webCrypto()).subtle;
    const encoder = new TextEncoder();
    const key = await subtle.importKey(
      "raw",
      encoder.encode(this.#secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const mac = await subtle.sign("HMAC", key, encoder.encode(`${this.id}/${fileId}/${options}`));
    return base64url(mac);
  }

  /** The URL's path (`/d/…`); `expires` is in Unix seconds. */
  async path(fileId: string, options: Signed): Promise<string> {
    const text = formatOptions(options);
    return `/d/${this.id}/${fileId}/${text}/${await this.sign(fileId, text)}`;
  }
}

/** The options a URL signs: the transform's, the version, and the expiry in Unix seconds. */
export function signedOptions(options: DeliveryUrlOptions, nowMs = Date.now()): Signed {
  const { expiresInSeconds, ...rest } = options;
  const expires =
    expiresInSeconds === undefined || expiresInSeconds === null
      ? undefined
      : Math.floor(nowMs / 1000) + expiresInSeconds;
  return { ...rest, expires };
}
