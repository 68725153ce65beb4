// Delivery URLs: signed offline with Web Crypto against the guide's test vectors
// (tests/delivery/vectors.json), the same URLs the API signs, resolved by the real server
// (STORAGE_BASE_URL, with the key STORAGE_API_KEY) to the bytes in the store.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { ConfigurationError, DeliveryKey, StorageClient } from "../dist/index.js";
import { equalBytes, png } from "./helpers.mjs";

const VECTORS = JSON.parse(
  await readFile(new URL("../../../tests/delivery/vectors.json", import.meta.url), "utf8"),
);

test("the client signs each of the guide's vectors", async () => {
  const key = new DeliveryKey(`${VECTORS.keyId}:${VECTORS.secret}`);
  for (const vector of VECTORS.vectors) {
    assert.equal(await key.path(VECTORS.fileId, vector.options), vector.path);
  }
  assert.throws(() => new DeliveryKey("dk_x:secret"), ConfigurationError);
});

test("offline and API-signed URLs are the same, and resolve to the bytes", async () => {
  const asking = new StorageClient({ deliveryKey: undefined });
  const base = asking.baseUrl;
  const created = await fetch(`${base}/v1/delivery-keys`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${process.env.STORAGE_API_KEY}`,
      "content-type": "application/json",
    },
    body: "{}",
  });
  assert.equal(created.status, 201);
  const { deliveryKey, secret } = (await created.json()).data;
  const data = png(40, 30);
  const file = await asking.files.upload(data, { filename: "dot.png" });
  const signing = new StorageClient({ deliveryKey: `${deliveryKey.id}:${secret}` });

  const plain = await signing.files.deliveryUrl(file.id);
  assert.equal(plain, await asking.files.deliveryUrl(file.id));
  const sized = await signing.files.deliveryUrl(file.id, { width: 20, format: "auto" });
  assert.equal(sized, await asking.files.deliveryUrl(file.id, { width: 20, format: "auto" }));
  assert.match(sized, /\/d\/dk_[0-9a-z]+\/file_[0-9a-z]+\/width=20,format=auto\//);

  const answer = await fetch(plain, { redirect: "manual" });
  assert.equal(answer.status, 302);
  const fetched = await fetch(answer.headers.get("location"));
  assert.ok(equalBytes(new Uint8Array(await fetched.arrayBuffer()), data));
  const expiring = await signing.files.deliveryUrl(file.id, { expiresInSeconds: 120 });
  assert.match(expiring, /\/expires=\d+\//);
  assert.equal((await fetch(expiring, { redirect: "manual" })).status, 302);
  const forged = await fetch(`${plain.slice(0, -2)}${plain.endsWith("AA") ? "BB" : "AA"}`);
  assert.equal(forged.status, 403);
  assert.equal((await forged.json()).error.code, "INVALID_SIGNATURE");
});
