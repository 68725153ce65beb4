// A static page on an origin of its own (examples/token-upload) uploads with an upload token
// alone, in headless Chromium: 30 MiB in parallel parts, a small image by one PUT, and the
// refusals shown to the user. PAGE_URL carries the token in its fragment; API_KEY is the key
// that minted it, which the browser must never see. RESULTS is where the files' digests go,
// for tests/js/browser/test_token_upload.py to check the stored bytes with the key.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { after, before, test } from "node:test";

import { launch, screenshot } from "./chromium.mjs";

const MIB = 1024 * 1024;
const API_KEY = process.env.API_KEY;
let browser;
let page;
const seen = []; // every request the browser made: [url, headers, body]
const stored = {}; // file id -> SHA-256 of the bytes the page sent

before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  page.on("request", (request) => {
    seen.push([request.url(), JSON.stringify(request.headers()), request.postData() ?? ""]);
  });
  page.on("pageerror", (error) => console.error("page error:", error));
  await page.goto(process.env.PAGE_URL);
  await page.waitForFunction(() => window.tokenPage !== undefined);
});

after(async () => {
  await writeFile(process.env.RESULTS, JSON.stringify(stored));
  await browser?.close();
});

/** Upload a file made in the page; the outcome, the progress reports, the digest. */
function uploadInPage(kind, name, size, type, { abortPast = 0 } = {}) {
  return page.evaluate(
    async ([kind, name, size, type, abortPast]) => {
      let blob;
      if (kind === "image") {
        const canvas = Object.assign(document.createElement("canvas"), { width: 64, height: 48 });
        const draw = canvas.getContext("2d");
        draw.fillStyle = "#3a7";
        draw.fillRect(0, 0, 64, 48);
        blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
      } else {
        const data = new Uint32Array(size / 4);
        let x = 7;
        for (let i = 0; i < data.length; i++) data[i] = x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        blob = new Blob([data]);
      }
      const file = new File([blob], name, { type });
      const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
      const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
      const events = [];
      let inFlight = 0;
      let most = 0;
      const send = XMLHttpRequest.prototype.send;
      XMLHttpRequest.prototype.send = function (body) {
        inFlight++;
        most = Math.max(most, inFlight);
        this.addEventListener("loadend", () => inFlight--);
        return send.call(this, body);
      };
      try {
        // Interrupted past ``abortPast`` bytes (one part at a time), then resumed with the
        // same token from where it stood: only the parts not yet held are sent.
        let resume;
        let heldAtAbort = null;
        if (abortPast) {
          const controller = new AbortController();
          try {
            await window.tokenPage.upload(file, {
              concurrency: 1,
              signal: controller.signal,
              onProgress: ({ loaded }) => loaded > abortPast && controller.abort(),
            });
          } catch (error) {
            if (error.name !== "AbortError" || !error.resume) throw error;
            resume = error.resume;
            heldAtAbort = error.completedParts.length;
            window.tokenPage.show(`Interrupted ${name} with ${heldAtAbort} part(s) sent; resuming.`);
          }
          inFlight = 0;
          most = 0;
        }
        const file_ = await window.tokenPage.upload(file, {
          resume,
          onProgress: ({ loaded, total }) => {
            events.push(loaded);
            document.querySelector("#progress").value = (100 * loaded) / total;
          },
        });
        return { ok: true, file: file_, digest: hex, events, most, heldAtAbort };
      } catch (error) {
        return { ok: false, name: error.name, code: error.code, status: error.status };
      } finally {
        XMLHttpRequest.prototype.send = send;
      }
    },
    [kind, name, size, type, abortPast],
  );
}

test("a file over the token's size is refused, and the page says so", async () => {
  const result = await uploadInPage("bytes", "huge.bin", 32 * MIB, "application/octet-stream");
  assert.deepEqual([result.ok, result.status, result.code], [false, 413, "FILE_TOO_LARGE"]);
  assert.match(await page.textContent("#status"), /Refused huge\.bin: FILE_TOO_LARGE/);
  await screenshot(page, "token-1-too-large");
});

test("a type outside the token's list is refused", async () => {
  const result = await uploadInPage("bytes", "page.html", 1024, "text/html");
  assert.deepEqual([result.ok, result.status, result.code], [false, 422, "CONTENT_TYPE_NOT_ALLOWED"]);
  assert.match(await page.textContent("#status"), /CONTENT_TYPE_NOT_ALLOWED/);
  await screenshot(page, "token-2-wrong-type");
});

test("30 MiB goes up in parallel parts with rising progress, resumed after an abort", async () => {
  const result = await uploadInPage("bytes", "video.bin", 30 * MIB, "application/octet-stream", {
    abortPast: 8 * MIB,
  });
  assert.ok(result.ok, JSON.stringify(result));
  assert.ok(result.heldAtAbort >= 1 && result.heldAtAbort < 4, `held: ${result.heldAtAbort}`);
  // Resumed from the parts the store holds: those the client saw complete, and perhaps the
  // one in flight at the abort, whose bytes may all have reached the store (concurrency 1).
  const resumedFrom = result.events[0] / (8 * MIB);
  assert.ok(
    resumedFrom === result.heldAtAbort || resumedFrom === result.heldAtAbort + 1,
    `resumed from ${resumedFrom} part(s), ${result.heldAtAbort} seen complete`,
  );
  assert.equal(result.file.status, "uploaded");
  assert.equal(result.file.size, 30 * MIB);
  assert.ok(result.most >= 2, `parts in flight at once: ${result.most}`);
  const rising = result.events.every((value, i) => i === 0 || value >= result.events[i - 1]);
  assert.ok(rising, "progress only rises");
  assert.ok(result.events.filter((v) => v > 0 && v < 30 * MIB).length >= 2, `${result.events}`);
  assert.equal(result.events.at(-1), 30 * MIB);
  stored[result.file.id] = result.digest;
  await screenshot(page, "token-3-parts-done");
});

test("a small image goes up in one PUT", async () => {
  const result = await uploadInPage("image", "avatar.png", 0, "image/png");
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.file.status, "uploaded");
  assert.equal(result.most, 1);
  stored[result.file.id] = result.digest;
  await screenshot(page, "token-4-image-done");
});

test("a third file past maxFiles 2 is refused", async () => {
  const result = await uploadInPage("image", "third.png", 0, "image/png");
  assert.deepEqual([result.ok, result.status, result.code], [false, 403, "UPLOAD_TOKEN_EXHAUSTED"]);
  assert.match(await page.textContent("#status"), /UPLOAD_TOKEN_EXHAUSTED/);
  await screenshot(page, "token-5-exhausted");
});

test("the page never held an API key", async () => {
  assert.ok(seen.length > 5);
  for (const [url, headers, body] of seen) {
    assert.ok(!`${url}${headers}${body}`.includes(API_KEY), `the key in a request to ${url}`);
    assert.ok(!/Bearer (sk|rk)_/.test(headers), `an API key sent to ${url}`);
  }
  const html = await page.content();
  assert.ok(!html.includes(API_KEY) && !/\b(sk|rk)_(test|live)_/.test(html));
});
