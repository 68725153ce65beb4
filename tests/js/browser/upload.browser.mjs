// The browser-upload example (examples/browser-upload) in headless Chromium: the page, on an
// origin of its own, PUTs straight to the store (another origin) through presigned URLs.
// EXAMPLE_URL is the page; API_KEY is the key its server holds, which the browser must never
// see. Run by tests/js/browser/test_browser_upload.py.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";

import { launch, screenshot } from "./chromium.mjs";

const EXAMPLE_URL = process.env.EXAMPLE_URL;
const API_KEY = process.env.API_KEY;
const MIB = 1024 * 1024;

let browser;
let page;
const seen = []; // every request the browser made: [url, headers, body]

before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  page.on("request", (request) => {
    seen.push([request.url(), JSON.stringify(request.headers()), request.postData() ?? ""]);
  });
  page.on("pageerror", (error) => console.error("page error:", error));
  await page.goto(EXAMPLE_URL);
  await page.waitForFunction(() => window.storageExample !== undefined);
});

after(async () => {
  await browser?.close();
});

/** A File of pseudo-random bytes, made in the page (no 20 MiB through the driver), and the
 * SHA-256 of its bytes. */
function makeFile(name, size, seed) {
  return page.evaluate(
    async ([name, size, seed]) => {
      const data = new Uint32Array(size / 4);
      let x = seed;
      for (let i = 0; i < data.length; i++) data[i] = x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      window.testFile = new File([data], name, { type: "application/octet-stream" });
      const digest = await crypto.subtle.digest("SHA-256", data);
      return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    },
    [name, size, seed],
  );
}

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** The stored file's bytes, fetched by the page from the store (a CORS GET), hashed there. */
function storedDigest(fileId) {
  return page.evaluate(async (id) => {
    const url = await window.storageExample.downloadUrl(id);
    const body = await (await fetch(url)).arrayBuffer();
    const digest = await crypto.subtle.digest("SHA-256", body);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }, fileId);
}

test("a small file goes up in one PUT from the form", async () => {
  const data = Buffer.from("A small file, sent by the page itself.\n");
  await page.setInputFiles("#file", { name: "note.txt", mimeType: "text/plain", buffer: data });
  await screenshot(page, "upload-1-chosen");
  await page.click("#send");
  await page.waitForSelector("#status:has-text('Uploaded note.txt')");
  await screenshot(page, "upload-2-small-done");
  const id = (await page.textContent("#status")).match(/file_[0-9a-z]+/)[0];
  assert.equal(await storedDigest(id), sha256(data));
  assert.equal(await page.getAttribute("#progress", "value"), "100");
});

test("20 MiB goes up in parallel parts, progress rising to 100%", async () => {
  const digest = await makeFile("big.bin", 20 * MIB, 7);
  const result = await page.evaluate(async () => {
    const file = window.testFile;
    const started = await window.storageExample.start(file);
    const events = [];
    let inFlight = 0;
    let most = 0;
    // Count the PUTs in flight at once: the parts go in parallel.
    const open = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (body) {
      inFlight++;
      most = Math.max(most, inFlight);
      this.addEventListener("loadend", () => inFlight--);
      return open.call(this, body);
    };
    try {
      // The page's own progress bar follows, as the form's does.
      const bar = document.querySelector("#progress");
      bar.value = 0;
      const stored = await window.storageExample.send(file, started, {
        onProgress: ({ loaded, total }) => {
          events.push([loaded, total]);
          bar.value = (100 * loaded) / total;
        },
      });
      return { kind: started.kind, parts: started.session.partCount, stored, events, most };
    } finally {
      XMLHttpRequest.prototype.send = open;
    }
  });
  assert.equal(result.kind, "multipart");
  assert.equal(result.parts, 3);
  assert.ok(result.most >= 2, `parts in flight at once: ${result.most}`);
  assert.equal(result.stored.status, "uploaded");
  assert.equal(result.stored.size, 20 * MIB);
  const loaded = result.events.map(([l]) => l);
  assert.ok(loaded.every((value, i) => i === 0 || value >= loaded[i - 1]), "progress only rises");
  const between = loaded.filter((value) => value > 0 && value < 20 * MIB);
  assert.ok(between.length >= 2, `progress between 0 and 100%: ${loaded}`);
  assert.deepEqual(result.events.at(-1), [20 * MIB, 20 * MIB]);
  assert.equal(await storedDigest(result.stored.id), digest);
  assert.equal(await page.getAttribute("#progress", "value"), "100");
  await page.evaluate((stored) => window.storageExample.uploaded(stored), result.stored);
  await screenshot(page, "upload-3-parts-done");
});

test("a part upload interrupted by signal.abort() resumes with the parts already sent", async () => {
  const digest = await makeFile("resumed.bin", 20 * MIB, 11);
  const result = await page.evaluate(async () => {
    const { uploadParts } = await import("storage-service-client/browser");
    const file = window.testFile;
    const started = await window.storageExample.start(file);
    const controller = new AbortController();
    // One part at a time: past the first part's bytes, that part is in the store.
    const aborted = await uploadParts(file, started.session, {
      concurrency: 1,
      signal: controller.signal,
      onProgress: ({ loaded }) => loaded > started.session.partSize && controller.abort(),
    }).then(
      () => null,
      (error) => ({ name: error.name, code: error.code, completed: error.completedParts }),
    );
    window.storageExample.show("Cancelled; resuming.", { error: true });
    const firstReport = [];
    const stored = await window.storageExample.send(file, started, {
      completed: aborted?.completed,
      onProgress: ({ loaded }) => firstReport.push(loaded),
    });
    return { aborted, resumedFrom: firstReport[0], stored };
  });
  assert.ok(result.aborted, "the upload was interrupted");
  assert.equal(result.aborted.name, "AbortError");
  assert.equal(result.aborted.code, "ABORTED");
  const held = result.aborted.completed.length;
  assert.ok(held >= 1 && held < 3, `parts done before the abort: ${held}`);
  assert.equal(result.resumedFrom, held * 8 * MIB, "the resumed upload counts the held parts");
  assert.equal(result.stored.status, "uploaded");
  assert.equal(await storedDigest(result.stored.id), digest);
});

test("a PUT with another content type than declared shows the store's refusal", async () => {
  const refusal = await page.evaluate(async () => {
    const blob = new Blob(["<p>not what was declared</p>"], { type: "text/plain" });
    const started = await window.storageExample.start(blob, { filename: "page.txt" });
    const headers = started.upload.headers;
    for (const name of Object.keys(headers)) if (name.toLowerCase() === "content-type") delete headers[name];
    headers["Content-Type"] = "text/html";
    try {
      await window.storageExample.send(blob, started);
      return null;
    } catch (error) {
      window.storageExample.show(`Upload failed: ${error.message}`, { error: true });
      return { name: error.name, status: error.status, code: error.code, message: error.message };
    }
  });
  assert.ok(refusal, "the store refused the PUT");
  assert.equal(refusal.name, "TransferError");
  assert.equal(refusal.status, 403);
  assert.equal(refusal.code, "SignatureDoesNotMatch");
  assert.match(await page.textContent("#status"), /SignatureDoesNotMatch/);
  await screenshot(page, "upload-4-refused");
});

test("the browser never held the API key, and never called the API", async () => {
  const apiOrigin = new URL(process.env.API_URL).origin;
  const pageOrigin = new URL(EXAMPLE_URL).origin;
  assert.ok(seen.length > 10);
  for (const [url, headers, body] of seen) {
    assert.ok(!`${url}${headers}${body}`.includes(API_KEY), `the key in a request to ${url}`);
    assert.ok(!/"authorization"/i.test(headers), `an Authorization header to ${url}`);
    assert.notEqual(new URL(url).origin, apiOrigin, `the browser called the API: ${url}`);
  }
  const store = seen.map(([url]) => new URL(url).origin).filter((o) => o !== pageOrigin);
  assert.ok(store.length > 0 && store.every((o) => o === store[0]), "PUTs went to the store only");
  assert.ok(!(await page.content()).includes(API_KEY));
});
