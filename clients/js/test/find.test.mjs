// Finding files (recursive, metadata), expiry and usage, against the real stack.
import assert from "node:assert/strict";
import { test } from "node:test";

import { StorageClient, ValidationError } from "../dist/index.js";

const client = new StorageClient();
const folder = `js-find-${Date.now()}`;

test("list below a folder (recursive) and by metadata", async () => {
  const top = await client.files.upload(Buffer.from("a"), { filename: "a.txt", path: folder, metadata: { year: 2026, kind: "x" } });
  const deep = await client.files.upload(Buffer.from("b"), { filename: "b.txt", path: `${folder}/sub/deeper`, metadata: { year: "2026" } });
  await client.files.upload(Buffer.from("c"), { filename: "c.txt", path: `${folder}/sub`, metadata: { year: 2025 } });
  const ids = async (options) => {
    const out = [];
    for await (const file of client.files.list(options)) out.push(file.id);
    return out.sort();
  };
  assert.deepEqual(await ids({ path: folder }), [top.id]);
  assert.equal((await ids({ path: folder, recursive: true })).length, 3);
  assert.deepEqual(await ids({ path: folder, recursive: true, metadata: { year: 2026 } }), [top.id, deep.id].sort());
  assert.deepEqual(await ids({ path: folder, recursive: true, metadata: { year: 2026, kind: "x" } }), [top.id]);
});

test("a file's expiry is set at upload, changed and cleared; a past one is refused", async () => {
  const when = new Date(Date.now() + 3_600_000);
  const file = await client.files.upload(Buffer.from("brief"), { filename: "t.txt", path: folder, expiresAt: when });
  assert.equal(Date.parse(file.expiresAt), Math.floor(when.getTime()));
  const cleared = await client.files.update(file.id, { expiresAt: null });
  assert.equal(cleared.expiresAt, null);
  const past = await client.files.update(file.id, { expiresAt: new Date(Date.now() - 60_000) }).catch((e) => e);
  assert.ok(past instanceof ValidationError);
});

test("usage counts what the project stores", async () => {
  const usage = await client.usage();
  assert.ok(usage.storage.bytes > 0 && usage.storage.files > 0, JSON.stringify(usage));
  assert.match(usage.bandwidth.month, /^\d{4}-\d{2}$/);
  assert.ok("maxStorageBytes" in usage.limits);
});
