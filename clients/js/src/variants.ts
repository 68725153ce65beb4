/** `client.variants`: resized copies of images, made by a worker, and waiting for them. */
import { StorageError, VariantFailedError, WaitTimeoutError } from "./errors.js";
import { sleep } from "./http.js";
import { fetchBytes, Resource } from "./resource.js";
import type { DownloadUrl, Schemas, Variant } from "./types.js";

export interface TransformOptions {
  width?: number;
  height?: number;
  fit?: "cover" | "contain" | "fill" | "inside" | "outside";
  format?: "webp" | "jpeg" | "png" | "avif";
  quality?: number;
}

export class Variants extends Resource {
  /** Ask for a resized copy (made by a worker). With `wait`, resolve once it is `ready`. */
  async create(
    fileId: string,
    params: TransformOptions,
    options: { wait?: boolean; timeoutMs?: number } = {},
  ): Promise<Variant> {
    const path = `/files/${fileId}/transform`;
    const variant = (await this.api.request<Schemas["VariantData"]>("POST", path, { json: params }))
      .data;
    return options.wait ? this.wait(fileId, variant.id, options) : variant;
  }

  /** Poll until the variant is `ready` (VariantFailedError if it fails, WaitTimeoutError
   * after `timeoutMs`, default 60 000). */
  async wait(fileId: string, variantId: string, options: { timeoutMs?: number } = {}): Promise<Variant> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    let delay = 0.2;
    for (;;) {
      let variant: Variant | undefined;
      for await (const each of this.list(fileId)) if (each.id === variantId) variant = each;
      if (!variant) throw new StorageError(`variant ${variantId} is not among file ${fileId}'s`);
      if (variant.status === "ready") return variant;
      if (variant.status === "failed") {
        const reason = variant.failureReason ?? "no reason";
        throw new VariantFailedError(`variant ${variant.label} failed: ${reason}`, {
          code: "VARIANT_FAILED",
        });
      }
      if (Date.now() + delay * 1000 > deadline) {
        throw new WaitTimeoutError(`variant ${variant.label} still ${variant.status}`, {
          code: "WAIT_TIMEOUT",
        });
      }
      await sleep(delay);
      delay = Math.min(2, delay * 1.5);
    }
  }

  /** Every variant of every version of the file, oldest first. */
  list(fileId: string): AsyncGenerator<Variant> {
    return this.api.pages<Variant>(`/files/${fileId}/variants`);
  }

  async downloadUrl(fileId: string, variantId: string): Promise<DownloadUrl> {
    const path = `/files/${fileId}/variants/${variantId}/download-url`;
    return this.api.request<DownloadUrl>("POST", path, { json: {} });
  }

  /** A `ready` variant's bytes. */
  async download(fileId: string, variantId: string): Promise<Uint8Array> {
    const { url } = await this.downloadUrl(fileId, variantId);
    return fetchBytes(url, this.client.settings.partRetries);
  }
}
