// Delivery URLs in a real page: three <img> of one photo at three widths, `format: auto`.
// Headless Chromium loads the page (served by a local server of this script's own), each
// image's naturalWidth and served type are checked, then the page is reloaded and the
// DevTools protocol shows every image request answered by the browser's cache. Run by
// tests/js/browser/test_delivery_browser.py, which signs the URLs (URLS, a JSON list of
// [width, url]) and checks afterwards that the reload reached no API.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launch, screenshot } from "./chromium.mjs";

const URLS = JSON.parse(process.env.URLS);
const API_ORIGIN = new URL(URLS[0][1]).origin;
const html =
  "<!doctype html><title>delivery</title><body>" +
  URLS.map(([width, url]) => `<img id="w${width}" src="${url}" alt="">`).join("") +
  "</body>";
let server;
let pageUrl;
let browser;
let page;
const report = {};

before(async () => {
  server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" });
    response.end(html);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  pageUrl = `http://127.0.0.1:${server.address().port}/`;
  browser = await launch();
  page = await browser.context.newPage();
});

after(async () => {
  await writeFile(join(process.env.ARTIFACTS, "delivery-report.json"), JSON.stringify(report));
  await browser?.close();
  server?.close();
});

async function loaded() {
  await page.waitForFunction(
    () => [...document.images].every((image) => image.complete && image.naturalWidth > 0),
    null,
    { timeout: 60_000 },
  );
}

test("each image loads at its width, as AVIF or WebP", async () => {
  const types = [];
  page.on("response", (response) => {
    const type = response.headers()["content-type"] ?? "";
    if (type.startsWith("image/")) types.push(type);
  });
  await page.goto(pageUrl);
  await loaded();
  for (const [width] of URLS) {
    const natural = await page.$eval(`#w${width}`, (image) => image.naturalWidth);
    assert.equal(natural, width);
  }
  report.types = types;
  assert.equal(types.length, URLS.length);
  for (const type of types) assert.ok(["image/avif", "image/webp"].includes(type), type);
  await screenshot(page, "delivery-1-images");
});

test("a reload takes every image from the browser's cache", async () => {
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send("Network.enable");
  // Every answer of the API during the reload, the redirects included (a 302 arrives as the
  // next request's redirectResponse): each must come from the browser's cache.
  const answers = [];
  const seen = (response) => {
    if (response?.url.startsWith(API_ORIGIN)) answers.push(response);
  };
  cdp.on("Network.requestWillBeSent", ({ redirectResponse }) => seen(redirectResponse));
  cdp.on("Network.responseReceived", ({ response }) => seen(response));
  await page.reload();
  await loaded();
  const reached = answers
    .filter((answer) => !(answer.fromDiskCache || answer.fromMemoryCache))
    .map((answer) => `${answer.status} ${answer.url}`);
  report.reload = { answers: answers.length, reached };
  assert.deepEqual(reached, []);
  await screenshot(page, "delivery-2-reloaded");
});
