// Folder operations as jobs, and batches, against the real stack (Celery workers run the jobs).
import assert from "node:assert/strict";
import { test } from "node:test";

import { NotFoundError, StorageClient, ValidationError } from "../dist/index.js";

const client = new StorageClient();
const folder = `js-folders-${Date.now()}`;

const inFolder = async (path, status) => {
  const out = [];
  for await (const file of client.files.list({ path, status })) out.push(file.filename);
  return out.sort();
};

test("a folder is moved, deleted and restored by jobs", async () => {
  for (const name of ["1.txt", "2.txt"]) {
    await client.files.upload(Buffer.from(name), { filename: name, path: `${folder}/old` });
  }
  const moved = await client.folders.move({ from: `${folder}/old`, to: `${folder}/new` }, { wait: true });
  assert.equal(moved.status, "succeeded");
  assert.equal(moved.filesDone, 2);
  assert.deepEqual(await inFolder(`${folder}/new`), ["1.txt", "2.txt"]);
  assert.deepEqual(await inFolder(`${folder}/old`), []);

  const started = await client.folders.delete(`${folder}/new`);
  assert.match(started.id, /^job_/);
  const deleted = await client.jobs.wait(started.id, { timeoutMs: 60_000 });
  assert.equal(deleted.status, "succeeded");
  assert.deepEqual(await inFolder(`${folder}/new`, "deleted"), ["1.txt", "2.txt"]);
  await client.folders.restore(`${folder}/new`, { wait: true });
  assert.deepEqual(await inFolder(`${folder}/new`), ["1.txt", "2.txt"]);

  const listed = [];
  for await (const job of client.jobs.list({ limit: 2 })) listed.push(job.id);
  assert.ok(listed.includes(started.id));
  const nothing = await client.folders.delete(`${folder}/nothing-here`).catch((e) => e);
  assert.ok(nothing instanceof NotFoundError);
  assert.equal(nothing.code, "FOLDER_NOT_FOUND");
});

test("a batch runs each operation as its endpoint would, in order", async () => {
  const a = await client.files.upload(Buffer.from("a"), { filename: "a.txt", path: `${folder}/batch` });
  const b = await client.files.upload(Buffer.from("b"), { filename: "b.txt", path: `${folder}/batch` });
  const c = await client.files.upload(Buffer.from("c"), { filename: "c.txt", path: `${folder}/batch` });
  const results = await client.files.batch([
    { op: "update", id: a.id, filename: "renamed.txt" },
    { op: "delete", id: b.id },
    { op: "copy", id: c.id, filename: "copy.txt" },
    { op: "restore", id: "file_00000000000000000000000000" },
  ]);
  assert.deepEqual(results.map((r) => [r.op, r.status]), [["update", 200], ["delete", 200], ["copy", 201], ["restore", 404]]);
  assert.equal(results[0].body.filename, "renamed.txt");
  assert.equal(results[3].body.error.code, "FILE_NOT_FOUND");
  assert.deepEqual(await inFolder(`${folder}/batch`), ["c.txt", "copy.txt", "renamed.txt"]);
  const empty = await client.files.batch([]).catch((e) => e);
  assert.ok(empty instanceof ValidationError);
});
