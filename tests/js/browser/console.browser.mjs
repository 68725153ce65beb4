// The staff console in headless Chromium at 1366x768: log in, open a project's page (its
// usage chart), browse its folders, open an image (its preview loads), download a version,
// issue and revoke a key, and visit every admin list and page: none scrolls sideways; then a
// staff user granted one project sees that project only. A screenshot of each page goes to
// ARTIFACTS. Run by tests/js/browser/test_console.py, which
// prepared the staff user, the project (PROJECT_ID) and its files, and checks the results.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launch, screenshot } from "./chromium.mjs";

const API_URL = process.env.API_URL;
const PROJECT_ID = process.env.PROJECT_ID;
const OTHER_PROJECT_ID = process.env.OTHER_PROJECT_ID;
// Previews and thumbnails are delivery URLs of the console's own key: /d/dk_…/file_…/…
const DELIVERY_URL = new RegExp(`^${API_URL}/d/dk_[0-9a-z]+/file_[0-9a-z]+/[^/]+/[A-Za-z0-9_-]+$`);
const WIDTH = 1366;
let browser;
let page;
const report = { widths: {} };

before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  await page.setViewportSize({ width: WIDTH, height: 768 });
  page.on("pageerror", (error) => console.error("page error:", error));
});

after(async () => {
  await writeFile(join(process.env.ARTIFACTS, "console-report.json"), JSON.stringify(report));
  await browser?.close();
});

/** The page fits the viewport's width: nothing scrolls sideways. */
async function fits(name) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  report.widths[name] = width;
  assert.ok(width <= WIDTH, `${name} is ${width} px wide`);
}

async function visit(url, name) {
  const response = await page.goto(url);
  assert.equal(response.status(), 200, url);
  await screenshot(page, name);
  await fits(name);
}

test("a staff user logs in to the storage console", async () => {
  await page.goto(`${API_URL}/admin/`);
  await page.fill("#id_username", process.env.ADMIN_USER);
  await page.fill("#id_password", process.env.ADMIN_PASSWORD);
  await Promise.all([page.waitForURL(`${API_URL}/admin/`), page.click("input[type=submit]")]);
  assert.match(await page.textContent("#site-name"), /Storage console/);
  await screenshot(page, "console-01-index");
  await fits("index");
});

test("the project's page charts its usage", async () => {
  await visit(`${API_URL}/admin/accounts/project/${PROJECT_ID}/change/?mode=test`, "console-02-project");
  const chart = await page.locator("#usage-chart").boundingBox();
  assert.ok(chart && chart.width > 300 && chart.height > 200, JSON.stringify(chart));
  assert.ok((await page.locator("#usage-chart rect").count()) >= 90, "30 days x 3 series");
});

test("browses the project's folders and opens an image: its preview loads", async () => {
  await page.click("#browse-files");
  await page.waitForSelector("#browser");
  await screenshot(page, "console-03-browse-root");
  await fits("browse-root");
  await Promise.all([page.waitForLoadState("load"), page.click('a.folder:has-text("photos")')]);
  await Promise.all([page.waitForLoadState("load"), page.click('a.folder:has-text("2026")')]);
  const thumb = page.locator("#files img.thumb").first();
  await thumb.waitFor();
  await page.waitForFunction(() => document.querySelector("#files img.thumb").complete);
  assert.ok(await thumb.evaluate((img) => img.naturalWidth > 0), "thumbnail");
  report.thumbnailSrc = await thumb.evaluate((img) => img.src);
  assert.match(report.thumbnailSrc, DELIVERY_URL);
  // Once the thumbnail has loaded, so the screenshot shows it.
  await screenshot(page, "console-04-browse-folder");
  await fits("browse-folder");
  await Promise.all([page.waitForLoadState("load"), page.click('a.file:has-text("sunset.png")')]);
  const preview = page.locator("#preview-image");
  await preview.waitFor();
  await page.waitForFunction(() => document.querySelector("#preview-image").complete);
  report.naturalWidth = await preview.evaluate((img) => img.naturalWidth);
  assert.ok(report.naturalWidth > 0, "the preview loaded");
  report.previewSrc = await preview.evaluate((img) => img.src);
  assert.match(report.previewSrc, DELIVERY_URL);
  await screenshot(page, "console-05-file");
  await fits("file");
});

test("downloads the first version of the file", async () => {
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.click('a.download:has-text("v1")'),
  ]);
  const saved = await download.path();
  report.downloaded = (await readFile(saved)).length;
  report.suggested = download.suggestedFilename();
  assert.ok(report.downloaded > 0);
});

test("issues an API key (shown once) and revokes it", async () => {
  await page.goto(`${API_URL}/admin/accounts/project/${PROJECT_ID}/change/?mode=test`);
  const section = page.locator("#keys-api");
  await section.locator(".issue-mode").selectOption("test");
  await section.locator(".issue-name").fill("console-browser");
  await Promise.all([page.waitForLoadState("load"), section.locator(".issue-button").click()]);
  const issued = /(sk_test_[A-Za-z0-9_-]{43})/.exec(await page.textContent("ul.messagelist"))?.[1];
  assert.ok(issued, "the secret is shown");
  report.keyPrefix = issued.slice(0, 16);
  await screenshot(page, "console-06-key-issued");
  await fits("key-issued");
  const me = await fetch(`${API_URL}/v1/me`, { headers: { Authorization: `Bearer ${issued}` } });
  assert.equal(me.status, 200);
  await page.reload();
  assert.ok(!(await page.content()).includes(issued), "shown once only");
  const row = page.locator(`tr.key-row[data-kind="api"][data-label="${report.keyPrefix}"]`);
  await Promise.all([page.waitForLoadState("load"), row.locator("button.revoke").click()]);
  assert.match(await page.textContent("ul.messagelist"), /Revoked api key/);
  await screenshot(page, "console-07-key-revoked");
  const after = await fetch(`${API_URL}/v1/me`, { headers: { Authorization: `Bearer ${issued}` } });
  assert.equal(after.status, 401);
});

for (const [kind, prefix, shot] of [
  ["delivery", "dsec_", "08-delivery-key"],
  ["upload-token", "ut_", "10-upload-token"],
]) {
  test(`issues a ${kind} key (shown once) and revokes it`, async () => {
    const section = page.locator(`#keys-${kind}`);
    await section.locator(".issue-mode").selectOption("test");
    await Promise.all([page.waitForLoadState("load"), section.locator(".issue-button").click()]);
    const found = new RegExp(`(${prefix}[A-Za-z0-9_-]{43})`).exec(
      await page.textContent("ul.messagelist"),
    );
    const secret = found?.[1];
    assert.ok(secret, "the secret is shown");
    await screenshot(page, `console-${shot}-issued`);
    await page.reload();
    assert.ok(!(await page.content()).includes(secret), "shown once only");
    const row = page.locator(`#keys-${kind} tr.key-row:has(button.revoke)`);
    assert.equal(await row.count(), 1);
    report[kind] = await row.getAttribute("data-label");
    await Promise.all([page.waitForLoadState("load"), row.locator("button.revoke").click()]);
    assert.match(await page.textContent("ul.messagelist"), /Revoked/);
    await screenshot(page, `console-${shot}-revoked`);
    await fits(`${kind}-revoked`);
  });
}

test("no admin list or page scrolls sideways at 1366 px", async () => {
  await page.goto(`${API_URL}/admin/`);
  const lists = await page.$$eval("#content-main a", (links) =>
    [...new Set(links.map((a) => a.getAttribute("href")).filter((h) => /^\/admin\/\w+\/\w+\/$/.test(h)))],
  );
  assert.ok(lists.length >= 8, lists.join(" "));
  for (const list of lists) {
    const name = list.split("/").slice(2, 4).join("-");
    await visit(`${API_URL}${list}`, `console-list-${name}`);
    const first = await page.$("#result_list tbody tr th a");
    if (first) {
      await Promise.all([page.waitForLoadState("load"), first.click()]);
      await screenshot(page, `console-page-${name}`);
      await fits(`page-${name}`);
    }
  }
});

test("a staff user granted one project sees that project only", async () => {
  await page.goto(`${API_URL}/admin/`);
  await Promise.all([page.waitForLoadState("load"), page.click("#logout-form button")]);
  await page.goto(`${API_URL}/admin/login/`);
  await page.fill("#id_username", process.env.GRANTED_USER);
  await page.fill("#id_password", process.env.GRANTED_PASSWORD);
  await Promise.all([page.waitForURL(`${API_URL}/admin/`), page.click("input[type=submit]")]);
  await visit(`${API_URL}/admin/accounts/project/`, "console-11-granted-projects");
  const listed = await page.$$eval("#result_list tbody tr", (rows) => rows.map((r) => r.textContent));
  report.grantedProjects = listed.length;
  assert.equal(listed.length, 1, listed.join(" | "));
  assert.ok(listed[0].includes(PROJECT_ID));
  await visit(`${API_URL}/admin/files/file/`, "console-12-granted-files");
  const files = await page.textContent("#result_list tbody");
  assert.ok(files.includes("sunset.png") && !files.includes("elsewhere.txt"), files);
  for (const url of [
    `${API_URL}/admin/accounts/project/${OTHER_PROJECT_ID}/change/`,
    `${API_URL}/admin/files/file/browse/${OTHER_PROJECT_ID}/`,
  ]) {
    const response = await page.goto(url);
    assert.equal(response.status(), 404, url);
  }
  await screenshot(page, "console-13-granted-other-404");
});
