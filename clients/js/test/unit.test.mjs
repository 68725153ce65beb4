// The client's own logic, against local HTTP servers: errors, retries, idempotency keys,
// webhook signatures. The real stack's tests are in lifecycle.test.mjs.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { test } from "node:test";

import {
  AuthenticationError,
  ConfigurationError,
  NotFoundError,
  RateLimitedError,
  SignatureError,
  StorageClient,
  StorageError,
  ValidationError,
  planParts,
  verifyWebhook,
} from "../dist/index.js";
import { uploadParts } from "../dist/browser.js";
import { closed } from "./helpers.mjs";

/** A local API: `answer(request, body)` returns [status, headers, body]. */
async function api(answer) {
  const seen = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (c) => chunks.push(c));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: request.method, url: request.url, headers: request.headers, body });
      const [status, headers, payload] = answer(request, body, seen.length);
      response.writeHead(status, { "Content-Type": "application/json", ...headers });
      response.end(payload === undefined ? "" : JSON.stringify(payload));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${server.address().port}`;
  return { seen, baseUrl, close: () => closed(server) };
}

const error = (code, message, details) => ({ error: { code, message, details } });

test("an error answer becomes its class, with status, code, details and request id", async () => {
  const server = await api(() => [
    404,
    { "X-Request-Id": "req_abc" },
    error("FILE_NOT_FOUND", "No such file.", { id: "file_x" }),
  ]);
  const client = new StorageClient({ apiKey: "sk_test_x", baseUrl: server.baseUrl });
  const failure = await client.files.get("file_x").catch((e) => e);
  await server.close();
  assert.ok(failure instanceof NotFoundError);
  assert.ok(failure instanceof StorageError);
  assert.equal(failure.status, 404);
  assert.equal(failure.code, "FILE_NOT_FOUND");
  assert.equal(failure.message, "No such file.");
  assert.deepEqual(failure.details, { id: "file_x" });
  assert.equal(failure.requestId, "req_abc");
  assert.equal(server.seen[0].headers.authorization, "Bearer sk_test_x");
});

test("429 is retried after Retry-After, then the answer is returned", async () => {
  const server = await api((request, body, count) =>
    count < 3
      ? [429, { "Retry-After": "0" }, error("RATE_LIMITED", "Slow down.")]
      : [200, {}, { data: { id: "file_x" } }],
  );
  const client = new StorageClient({ apiKey: "sk_test_x", baseUrl: server.baseUrl });
  const file = await client.files.get("file_x");
  await server.close();
  assert.equal(file.id, "file_x");
  assert.equal(server.seen.length, 3);
});

test("a Retry-After longer than maxRetryWaitSeconds is not waited for", async () => {
  const server = await api(() => [429, { "Retry-After": "120" }, error("RATE_LIMITED", "Slow.")]);
  const client = new StorageClient({
    apiKey: "sk_test_x",
    baseUrl: server.baseUrl,
    maxRetryWaitSeconds: 5,
  });
  const failure = await client.files.get("file_x").catch((e) => e);
  await server.close();
  assert.ok(failure instanceof RateLimitedError);
  assert.equal(failure.retryAfter, 120);
  assert.equal(server.seen.length, 1);
});

test("400 and 401 map to ValidationError and AuthenticationError; POSTs are not retried", async () => {
  const server = await api((request) =>
    request.url.endsWith("/me")
      ? [401, {}, error("UNAUTHENTICATED", "Bad key.")]
      : [400, {}, error("VALIDATION_ERROR", "Bad.", { size: ["required"] })],
  );
  const client = new StorageClient({ apiKey: "sk_test_x", baseUrl: server.baseUrl });
  assert.ok((await client.me().catch((e) => e)) instanceof AuthenticationError);
  const failure = await client.uploads
    .create({ filename: "a", contentType: "text/plain", size: 1 })
    .catch((e) => e);
  await server.close();
  assert.ok(failure instanceof ValidationError);
  assert.deepEqual(failure.details, { size: ["required"] });
});

test("uploads send an Idempotency-Key; a given key is sent as is", async () => {
  const server = await api(() => [500, {}, error("INTERNAL_ERROR", "Oops.")]);
  const client = new StorageClient({
    apiKey: "sk_test_x",
    baseUrl: server.baseUrl,
    maxRetries: 0,
  });
  await client.files.upload(new Uint8Array(3), { filename: "a.txt" }).catch(() => {});
  await client.uploads
    .create({ filename: "b", contentType: "text/plain", size: 3, idempotencyKey: "k-1" })
    .catch(() => {});
  await server.close();
  assert.match(server.seen[0].headers["idempotency-key"], /^sdk-[0-9a-f]{32}$/);
  assert.equal(server.seen[1].headers["idempotency-key"], "k-1");
  assert.deepEqual(JSON.parse(server.seen[0].body), {
    filename: "a.txt",
    contentType: "text/plain",
    size: 3,
  });
});

test("no key or base URL is a ConfigurationError; the environment supplies them", () => {
  const saved = { ...process.env };
  delete process.env.STORAGE_API_KEY;
  delete process.env.STORAGE_BASE_URL;
  assert.throws(() => new StorageClient(), ConfigurationError);
  process.env.STORAGE_API_KEY = "sk_test_env";
  process.env.STORAGE_BASE_URL = "http://example.test/v1/";
  assert.equal(new StorageClient().baseUrl, "http://example.test");
  assert.throws(() => new StorageClient({ baseUrl: "ftp://x" }), ConfigurationError);
  process.env = saved;
});

test("planParts matches the service's part sizes", () => {
  assert.deepEqual(planParts(20 * 1024 * 1024), {
    size: 20 * 1024 * 1024,
    partSize: 8 * 1024 * 1024,
    partCount: 3,
  });
  assert.equal(planParts(200 * 1024 ** 3).partCount <= 10_000, true);
});

const sign = (secret, t, body) =>
  createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");

test("verifyWebhook accepts a fresh signature under any of the secrets", async () => {
  const body = JSON.stringify({ id: "evt_1", type: "file.uploaded", data: {} });
  const t = Math.floor(Date.now() / 1000);
  const header = `t=${t},v1=${sign("whsec_new", t, body)},v1=${sign("whsec_old", t, body)}`;
  assert.equal((await verifyWebhook(body, header, "whsec_old")).id, "evt_1");
  assert.equal((await verifyWebhook(Buffer.from(body), header, ["x", "whsec_new"])).id, "evt_1");
});

test("verifyWebhook refuses a mismatch, a replay, a malformed header, a non-object", async () => {
  const body = '{"id":"evt_1"}';
  const t = Math.floor(Date.now() / 1000);
  const code = (promise) => promise.then(() => "accepted", (e) => e instanceof SignatureError && e.code);
  assert.equal(await code(verifyWebhook(body, `t=${t},v1=${sign("a", t, body)}`, "b")), "SIGNATURE_MISMATCH");
  assert.equal(
    await code(verifyWebhook(body + " ", `t=${t},v1=${sign("a", t, body)}`, "a")),
    "SIGNATURE_MISMATCH",
  );
  const old = t - 301;
  assert.equal(await code(verifyWebhook(body, `t=${old},v1=${sign("a", old, body)}`, "a")), "SIGNATURE_EXPIRED");
  assert.equal(
    await code(verifyWebhook(body, `t=${old},v1=${sign("a", old, body)}`, "a", { toleranceSeconds: 0 })),
    "accepted",
  );
  assert.equal(await code(verifyWebhook(body, "v1=abc", "a")), "SIGNATURE_MALFORMED");
  assert.equal(await code(verifyWebhook(body, null, "a")), "SIGNATURE_MALFORMED");
  assert.equal(await code(verifyWebhook("[1]", `t=${t},v1=${sign("a", t, "[1]")}`, "a")), "INVALID_PAYLOAD");
});

test("uploadParts sends a part that is the whole Blob as that Blob, other parts as slices", async () => {
  const real = globalThis.fetch;
  const bodies = [];
  globalThis.fetch = async (url, init) => {
    bodies.push(init.body);
    return new Response(null, { status: 200, headers: { ETag: `"etag-${bodies.length}"` } });
  };
  try {
    const parts = (n) =>
      Array.from({ length: n }, (_, i) => ({
        partNumber: i + 1,
        url: `http://127.0.0.1:9/part/${i + 1}`,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      }));
    const whole = new Blob([new Uint8Array(100)]);
    await uploadParts(whole, { partSize: 100, partCount: 1, size: 100, parts: parts(1) });
    assert.equal(bodies[0], whole);
    bodies.length = 0;
    const two = new Blob([new Uint8Array(150)]);
    await uploadParts(two, { partSize: 100, partCount: 2, size: 150, parts: parts(2) }, {
      concurrency: 1,
    });
    assert.deepEqual(
      bodies.map((body) => [body === two, body.size]),
      [
        [false, 100],
        [false, 50],
      ],
    );
  } finally {
    globalThis.fetch = real;
  }
});
