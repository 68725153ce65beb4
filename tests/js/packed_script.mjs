// Run from a folder where only the packed tarball of clients/js is installed: the package as
// an application gets it. Uploads, lists, downloads, and verifies a real webhook delivery.
import { createServer } from "node:http";

import { StorageClient, StorageError, verifyWebhook } from "storage-service-client";
import { uploadParts } from "storage-service-client/browser";

const client = new StorageClient(); // STORAGE_API_KEY, STORAGE_BASE_URL
const deliveries = [];
const receiver = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    deliveries.push({ body: Buffer.concat(chunks), signature: request.headers["service-signature"] });
    response.writeHead(200).end();
  });
});
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const hookUrl = `http://127.0.0.1:${receiver.address().port}/hook`;
const check = (ok, what) => {
  if (!ok) throw new Error(`failed: ${what}`);
};

try {
  check(typeof uploadParts === "function", "the browser entry exports uploadParts");
  const { webhook, secret } = await client.webhooks.create({ url: hookUrl, events: ["file.uploaded"] });
  const text = `packed at ${new Date().toISOString()}`;
  const file = await client.files.upload(Buffer.from(text), { filename: "packed.txt", path: "packed" });
  check(file.status === "uploaded", "uploaded");
  const listed = [];
  for await (const each of client.files.list({ path: "packed" })) listed.push(each.id);
  check(listed.includes(file.id), "listed");
  check(new TextDecoder().decode(await client.files.download(file.id)) === text, "downloaded");
  const deadline = Date.now() + 20_000;
  let event = null;
  while (!event && Date.now() < deadline) {
    for (const delivery of deliveries) {
      const verified = await verifyWebhook(delivery.body, delivery.signature, secret);
      if (verified.data.fileId === file.id) event = verified;
    }
    if (!event) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  check(event?.type === "file.uploaded", "a verified delivery");
  const missing = await client.files.get("file_00000000000000000000000000").catch((e) => e);
  check(missing instanceof StorageError && missing.code === "FILE_NOT_FOUND", "errors");
  await client.webhooks.delete(webhook.id);
  console.log(JSON.stringify({ fileId: file.id, event: event.id }));
} finally {
  receiver.close();
}
