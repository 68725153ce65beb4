// The server-side client through a file's whole life, against the real stack: the API
// (STORAGE_BASE_URL, with the key STORAGE_API_KEY), SeaweedFS through presigned URLs, the
// Celery workers (variants, webhook deliveries). tests/js/test_node_client.py starts them.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";

import {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  StorageClient,
  StorageError,
  TransferError,
  verifyWebhook,
} from "../dist/index.js";
import { MIB, bytes, equalBytes, png, receiver } from "./helpers.mjs";

// Multipart from 9 MiB on (the service's parts are 8 MiB at least): 17 MiB is three parts.
const client = new StorageClient({ multipartThreshold: 9 * MIB });
const folder = `js-${Date.now()}`;
let dir;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "storage-js-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("upload from a path in one PUT; get, download and the download URL give its bytes", async () => {
  const data = bytes(300_000, 7);
  const path = join(dir, "report.pdf");
  await writeFile(path, data);
  const seen = [];
  const file = await client.files.upload(path, {
    path: folder,
    metadata: { owner: "node" },
    onProgress: (p) => seen.push(p.loaded),
  });
  assert.equal(file.status, "uploaded");
  assert.equal(file.filename, "report.pdf");
  assert.equal(file.contentType, "application/pdf");
  assert.equal(file.size, data.byteLength);
  assert.equal(file.path, folder);
  assert.deepEqual(file.metadata, { owner: "node" });
  assert.equal(seen.at(-1), data.byteLength);
  assert.deepEqual(await client.files.get(file.id), file);
  assert.ok(equalBytes(await client.files.download(file.id), data));
  const { url, expiresAt } = await client.files.downloadUrl(file.id, { expiresInSeconds: 120 });
  assert.ok(Date.parse(expiresAt) - Date.now() <= 121_000);
  assert.ok(equalBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()), data));
});

test("upload a Buffer, a Blob and a stream; the same Idempotency-Key makes one file", async () => {
  const buffer = await client.files.upload(Buffer.from("plain text"), {
    filename: "note.txt",
    path: folder,
  });
  assert.equal(buffer.contentType, "text/plain");
  const blob = await client.files.upload(new Blob([bytes(1000, 3)], { type: "image/x-test" }), {
    filename: "blob.bin",
    path: folder,
  });
  assert.equal(blob.contentType, "image/x-test");
  const streamed = bytes(200_000, 5);
  const stream = await client.files.upload(Readable.from([streamed.subarray(0, 1000), streamed.subarray(1000)]), {
    filename: "stream.bin",
    path: folder,
  });
  assert.ok(equalBytes(await client.files.download(stream.id), streamed));

  const once = { filename: "once.txt", path: folder, idempotencyKey: `node-${Date.now()}` };
  const first = await client.files.upload(Buffer.from("once"), once);
  const again = await client.files.upload(Buffer.from("once"), once);
  assert.equal(again.id, first.id);
  assert.equal(again.status, "uploaded");
});

test("a multipart upload in parallel parts, from a path and from a sized stream", async () => {
  const data = bytes(17 * MIB, 11);
  const path = join(dir, "big.bin");
  await writeFile(path, data);
  const seen = [];
  const file = await client.files.upload(path, {
    path: folder,
    onProgress: (p) => seen.push(p),
  });
  assert.equal(file.status, "uploaded");
  assert.equal(file.size, data.byteLength);
  assert.ok(seen.length > 3, "progress is reported as the parts go");
  assert.deepEqual(seen.at(-1), { loaded: data.byteLength, total: data.byteLength });
  assert.ok(seen.every((p, i) => i === 0 || p.loaded >= seen[i - 1].loaded));
  assert.ok(equalBytes(await client.files.download(file.id), data));

  const streamed = await client.files.upload(Readable.from(chunks(data, 64 * 1024)), {
    filename: "streamed.bin",
    size: data.byteLength,
    path: folder,
  });
  assert.ok(equalBytes(await client.files.download(streamed.id), data));
});

// The parts the store holds once those in flight at an abort have landed or failed: an
// aborted request can still reach the store after the client gave up on it.
async function settledParts(uploadId) {
  let held = await client.uploads.parts(uploadId);
  for (let tries = 0; tries < 20; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const again = await client.uploads.parts(uploadId);
    if (again.length === held.length) return again;
    held = again;
  }
  return held;
}

function* chunks(data, size) {
  for (let at = 0; at < data.byteLength; at += size) yield data.subarray(at, at + size);
}

test("an interrupted multipart upload names its session; resume sends the rest", async () => {
  const data = bytes(17 * MIB, 13);
  const path = join(dir, "resumed.bin");
  await writeFile(path, data);
  const controller = new AbortController();
  const failure = await client.files
    .upload(path, {
      path: folder,
      onProgress: (p) => p.loaded >= 8 * MIB && controller.abort(),
      signal: controller.signal,
    })
    .catch((e) => e);
  assert.ok(failure instanceof StorageError, String(failure));
  assert.equal(failure.name, "AbortError");
  assert.match(failure.uploadId, /^upload_/);
  const held = await settledParts(failure.uploadId);
  assert.ok(held.length >= 1, "the part sent before the abort is held");
  // The source changed in its first part since: the held part's MD5 no longer matches, so
  // resume sends it again rather than assembling stale bytes.
  data[0] ^= 0xff;
  await writeFile(path, data);
  const seen = [];
  const file = await client.uploads.resume(failure.uploadId, path, {
    onProgress: (p) => seen.push(p.loaded),
  });
  assert.equal(file.status, "uploaded");
  assert.ok(seen[0] < held.length * 8 * MIB, "the changed part is not counted as held");
  assert.ok(equalBytes(await client.files.download(file.id), data));
});

test("list is an async iterable over every page; folders list the folders", async () => {
  const names = [];
  for await (const file of client.files.list({ path: folder, limit: 2, sortBy: "filename", order: "asc" })) {
    names.push(file.filename);
  }
  assert.ok(names.length >= 8, names.join());
  assert.deepEqual(names, [...names].sort());
  const folders = [];
  for await (const each of client.folders.list()) folders.push(each.path);
  assert.ok(folders.includes(folder), folders.join());
});

test("update, copy, replace, delete and restore", async () => {
  const file = await client.files.upload(Buffer.from("version one"), {
    filename: "doc.txt",
    path: folder,
  });
  const renamed = await client.files.update(file.id, {
    filename: "renamed.txt",
    path: `${folder}/moved`,
    metadata: { k: 1 },
  });
  assert.equal(renamed.filename, "renamed.txt");
  assert.equal(renamed.path, `${folder}/moved`);
  assert.deepEqual(renamed.metadata, { k: 1 });

  const copy = await client.files.copy(file.id, { filename: "copy.txt" });
  assert.notEqual(copy.id, file.id);
  assert.equal(copy.filename, "copy.txt");
  assert.equal(new TextDecoder().decode(await client.files.download(copy.id)), "version one");

  const replaced = await client.files.replace(file.id, Buffer.from("version two!"));
  assert.equal(replaced.version, 2);
  assert.equal(new TextDecoder().decode(await client.files.download(file.id)), "version two!");

  await client.files.delete(file.id);
  assert.ok((await client.files.get(file.id).catch((e) => e)) instanceof NotFoundError);
  const trash = [];
  for await (const each of client.files.list({ path: `${folder}/moved`, status: "deleted" })) {
    trash.push(each.id);
  }
  assert.deepEqual(trash, [file.id]);
  const restore = await client.files.restore(file.id);
  assert.equal(restore.status, "uploaded");
  const conflict = await client.files.restore(file.id).catch((e) => e);
  assert.ok(conflict instanceof ConflictError);
});

test("errors carry status, code and request id; a bad key is a 401", async () => {
  const missing = await client.files.get("file_00000000000000000000000000").catch((e) => e);
  assert.ok(missing instanceof NotFoundError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "FILE_NOT_FOUND");
  assert.match(missing.requestId, /^req_/);
  const stranger = new StorageClient({ apiKey: "sk_test_not_a_real_key", baseUrl: client.baseUrl });
  const denied = await stranger.me().catch((e) => e);
  assert.ok(denied instanceof AuthenticationError);
  assert.equal(denied.status, 401);
});

test("a PUT of other bytes than declared is refused by the store", async () => {
  const { upload } = await client.files.startUpload({
    filename: "liar.txt",
    contentType: "text/plain",
    size: 10,
  });
  const { uploadWithDescriptor } = await import("../dist/browser.js");
  const refused = await uploadWithDescriptor(new Blob(["eleven bytes"]), upload).catch((e) => e);
  assert.ok(refused instanceof TransferError, String(refused));
  assert.equal(refused.status, 403);
});

test("a variant of an image is made by the worker and downloads as an image", async () => {
  const image = await client.files.upload(png(64, 48), { filename: "pic.png", path: folder });
  const variant = await client.variants.create(
    image.id,
    { width: 32, format: "webp" },
    { wait: true, timeoutMs: 60_000 },
  );
  assert.equal(variant.status, "ready");
  assert.equal(variant.width, 32);
  const webp = await client.variants.download(image.id, variant.id);
  assert.equal(Buffer.from(webp.subarray(8, 12)).toString(), "WEBP");
  const listed = [];
  for await (const each of client.variants.list(image.id)) listed.push(each.id);
  assert.ok(listed.includes(variant.id));
});

test("a webhook delivery arrives and verifies; the delivery log lists it", async () => {
  const hook = await receiver();
  try {
    const { webhook, secret } = await client.webhooks.create({
      url: hook.url,
      events: ["file.uploaded"],
    });
    assert.match(secret, /^whsec_/);
    assert.equal((await client.webhooks.get(webhook.id)).url, hook.url);
    const file = await client.files.upload(Buffer.from("ping"), { filename: "hook.txt", path: folder });
    const request = await hook.wait((r) => r.body.includes(file.id));
    const event = await verifyWebhook(request.body, request.headers["service-signature"], secret);
    assert.equal(event.type, "file.uploaded");
    assert.equal(event.data.fileId, file.id);
    await assert.rejects(
      verifyWebhook(request.body, request.headers["service-signature"], "whsec_wrong"),
      { code: "SIGNATURE_MISMATCH" },
    );
    let delivered = null;
    for (let i = 0; i < 40 && !delivered; i++) {
      for await (const d of client.webhooks.deliveries(webhook.id)) {
        if (d.status === "DELIVERED") delivered = d;
      }
      if (!delivered) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(delivered, "the delivery is logged as DELIVERED");
    const again = await client.webhooks.redeliver(webhook.id, delivered.id).catch((e) => e);
    assert.ok(again instanceof ConflictError || again.id === delivered.id);
    assert.ok((await client.webhooks.list()).some((w) => w.id === webhook.id));
    await client.webhooks.delete(webhook.id);
  } finally {
    await hook.close();
  }
});
