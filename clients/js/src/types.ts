/** Names for the generated shapes (src/generated/openapi.ts), as the API answers them. */
import type { components } from "./generated/openapi.js";

export type Schemas = components["schemas"];
export type StoredFile = Schemas["File"];
export type UploadDescriptor = Schemas["UploadDescriptor"];
export type Folder = Schemas["Folder"];
export type Variant = Schemas["Variant"];
export type Webhook = Schemas["Webhook"];
export type Delivery = Schemas["Delivery"];
export type DownloadUrl = Schemas["DownloadUrl"];
export type HeldPart = Schemas["HeldPart"];
export type Me = Schemas["Me"];
export type Job = Schemas["Job"];
export type WebhookEvent = Schemas["EventEnvelope"];
export type { components, paths } from "./generated/openapi.js";
