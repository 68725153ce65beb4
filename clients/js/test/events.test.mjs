// Events and webhook replay and rotation, against the real stack (see lifecycle.test.mjs).
import assert from "node:assert/strict";
import { test } from "node:test";

import { NotFoundError, StorageClient, verifyWebhook } from "../dist/index.js";
import { receiver } from "./helpers.mjs";

const client = new StorageClient();
const folder = `js-events-${Date.now()}`;

test("events list and get the envelopes webhooks receive", async () => {
  const file = await client.files.upload(Buffer.from("evented"), { filename: "e.txt", path: folder });
  let found = null;
  for await (const event of client.events.list({ type: "file.uploaded", limit: 5 })) {
    if (event.data.fileId === file.id) {
      found = event;
      break;
    }
  }
  assert.ok(found, "the upload's event is listed");
  assert.equal(found.type, "file.uploaded");
  assert.deepEqual(await client.events.get(found.id), found);
  const missing = await client.events.get("evt_00000000000000000000000000").catch((e) => e);
  assert.ok(missing instanceof NotFoundError);
});

test("replay sends past events again; a rotated secret signs with both", async () => {
  const hook = await receiver();
  try {
    const since = new Date(Date.now() - 60_000);
    const file = await client.files.upload(Buffer.from("before"), { filename: "r.txt", path: folder });
    const { webhook, secret } = await client.webhooks.create({ url: hook.url, events: ["file.uploaded"] });
    const { deliveries } = await client.webhooks.replay(webhook.id, { since });
    assert.ok(deliveries >= 1, `deliveries: ${deliveries}`);
    const replayed = await hook.wait((r) => r.body.includes(file.id));
    assert.equal((await verifyWebhook(replayed.body, replayed.headers["service-signature"], secret)).data.fileId, file.id);

    const rotated = await client.webhooks.rotateSecret(webhook.id, { overlapSeconds: 600 });
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, secret);
    const next = await client.files.upload(Buffer.from("after"), { filename: "s.txt", path: folder });
    const request = await hook.wait((r) => r.body.includes(next.id));
    const header = request.headers["service-signature"];
    assert.equal((header.match(/v1=/g) ?? []).length, 2, header);
    for (const key of [rotated.secret, secret]) {
      assert.equal((await verifyWebhook(request.body, header, key)).data.fileId, next.id);
    }
    await client.webhooks.delete(webhook.id);
  } finally {
    await hook.close();
  }
});
