/**
 * storage-service-client: the file storage service's client.
 *
 * On a server: `new StorageClient({ apiKey, baseUrl })` (`client.uploadTokens.create()`
 * mints a page's upload token). In a browser, only `uploadWithToken`, `uploadWithDescriptor`
 * and `uploadParts` (also importable alone from `storage-service-client/browser`): the page
 * never holds an API key.
 */
export {
  type BatchOperation,
  type ClientOptions,
  type Declared,
  Files,
  Folders,
  Jobs,
  type ListOptions,
  planParts,
  StorageClient,
  type TransformOptions,
  type UploadOptions,
  Uploads,
  Variants,
  type WaitOptions,
} from "./client.js";
export * from "./errors.js";
export {
  DELIVERY_KEY_ENV,
  DeliveryKey,
  type DeliveryUrlOptions,
  formatOptions,
} from "./delivery.js";
export { uploadParts, uploadWithDescriptor, type DescriptorOptions } from "./browser.js";
export {
  TokenUploadAbortError,
  type TokenUploadOptions,
  type TokenUploadResume,
  uploadWithToken,
} from "./tokens.js";
export { type UploadToken, type UploadTokenCreate, UploadTokens } from "./uploadtokens.js";
export { guessContentType, type UploadSource } from "./source.js";
export type {
  MultipartSession,
  OnProgress,
  PartsOptions,
  PresignedPart,
  Progress,
} from "./transfer.js";
export type * from "./types.js";
export {
  Events,
  SIGNATURE_HEADER,
  type VerifyOptions,
  verifyWebhook,
  Webhooks,
} from "./webhooks.js";
export { VERSION } from "./http.js";
