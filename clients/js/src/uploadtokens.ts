/** Upload tokens on the application's server: mint one for a page, list, read, revoke. */
import type { Api } from "./http.js";
import type { Schemas } from "./types.js";

export type UploadToken = Schemas["UploadToken"];
/** The bounds, each optional (the generated type marks fields that have defaults as set). */
export type UploadTokenCreate = Partial<Schemas["UploadTokenCreateRequest"]>;

export class UploadTokens {
  constructor(private readonly api: Api) {}

  /** Mint a token: resolves to it and the token itself (`ut_…`), shown only this once. Hand
   * the token to the page, which calls `uploadWithToken` with it. */
  async create(bounds: UploadTokenCreate = {}): Promise<{ uploadToken: UploadToken; token: string }> {
    const answer = await this.api.request<{ data: { uploadToken: UploadToken; token: string } }>(
      "POST",
      "/upload-tokens",
      { json: bounds },
    );
    return answer.data;
  }

  /** The project's tokens, newest first, every page (never the tokens themselves). */
  list(options: { limit?: number } = {}): AsyncGenerator<UploadToken, void, undefined> {
    return this.api.pages<UploadToken>("/upload-tokens", { limit: options.limit });
  }

  async get(id: string): Promise<UploadToken> {
    return (await this.api.request<{ data: UploadToken }>("GET", `/upload-tokens/${id}`)).data;
  }

  /** The token stops working at once; revoking twice succeeds. */
  async revoke(id: string): Promise<void> {
    await this.api.request("DELETE", `/upload-tokens/${id}`);
  }
}
