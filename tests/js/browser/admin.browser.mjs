// The Django admin, clicked through by a staff user in headless Chromium: log in, create an
// organization and a project, issue a key (its secret shown once), revoke it (the API then
// answers 401), redeliver a failed webhook delivery. A screenshot of each page goes to
// ARTIFACTS. Run by tests/js/browser/test_admin.py, which prepared the staff user (ADMIN_USER,
// ADMIN_PASSWORD) and the failed delivery (DELIVERY_ID), and checks the database afterwards.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launch, screenshot } from "./chromium.mjs";

const API_URL = process.env.API_URL;
const ORGANIZATION = process.env.ORGANIZATION;
const PROJECT = process.env.PROJECT;
let browser;
let page;
let issued; // the new key, as the admin showed it once
const report = {};

before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  page.on("pageerror", (error) => console.error("page error:", error));
});

after(async () => {
  await writeFile(join(process.env.ARTIFACTS, "admin-report.json"), JSON.stringify(report));
  await browser?.close();
});

const success = () => page.textContent("ul.messagelist");

/** Tick the changelist row whose text has `needle`, run `action`, confirm it went. */
async function runAction(needle, action) {
  const row = page.locator("#result_list tbody tr", { hasText: needle });
  assert.equal(await row.count(), 1, `one row for ${needle}`);
  await row.locator("input.action-select").check();
  await page.selectOption("select[name=action]", action);
  await Promise.all([page.waitForLoadState("load"), page.click("button[name=index]")]);
}

test("a staff user logs in", async () => {
  await page.goto(`${API_URL}/admin/`);
  await page.fill("#id_username", process.env.ADMIN_USER);
  await page.fill("#id_password", process.env.ADMIN_PASSWORD);
  await screenshot(page, "admin-1-login");
  await Promise.all([page.waitForURL(`${API_URL}/admin/`), page.click("input[type=submit]")]);
  assert.match(await page.textContent("body"), /Storage console/);
  await screenshot(page, "admin-2-index");
});

test("creates an organization, then a project in it", async () => {
  await page.goto(`${API_URL}/admin/accounts/organization/add/`);
  await page.fill("#id_name", ORGANIZATION);
  await screenshot(page, "admin-3-organization-add");
  await Promise.all([page.waitForURL(/organization\/$/), page.click("input[name=_save]")]);
  assert.match(await success(), new RegExp(`${ORGANIZATION}.*added successfully`));
  await screenshot(page, "admin-4-organization-added");

  await page.goto(`${API_URL}/admin/accounts/project/add/`);
  await page.selectOption("#id_organization", { label: ORGANIZATION });
  await page.fill("#id_name", PROJECT);
  await screenshot(page, "admin-5-project-add");
  await Promise.all([page.waitForURL(/project\/$/), page.click("input[name=_save]")]);
  assert.match(await success(), /added successfully/);
  await screenshot(page, "admin-6-project-added");
});

test("issues a key: its secret is shown once, never again", async () => {
  await page.goto(`${API_URL}/admin/accounts/apikey/add/`);
  const option = await page.$eval(
    "#id_project",
    (select, name) => [...select.options].find((o) => o.text.startsWith(`${name} (`))?.value,
    PROJECT,
  );
  assert.ok(option, "the new project is offered");
  await page.selectOption("#id_project", option);
  await page.selectOption("#id_environment", "test");
  await page.fill("#id_name", "browser test");
  await screenshot(page, "admin-7-key-add");
  await Promise.all([page.waitForURL(/apikey\/$/), page.click("input[name=_save]")]);
  issued = /(sk_test_[A-Za-z0-9_-]+)/.exec(await success())?.[1];
  assert.ok(issued, "the new key is in the confirmation");
  report.projectId = option;
  report.keyPrefix = issued.slice(0, 16);
  await screenshot(page, "admin-8-key-shown-once");

  const me = await fetch(`${API_URL}/v1/me`, { headers: { Authorization: `Bearer ${issued}` } });
  assert.equal(me.status, 200);
  assert.equal((await me.json()).data.project.id, option);

  await page.reload();
  assert.ok(!(await page.content()).includes(issued), "the list does not show it again");
  await page.click(`#result_list a:has-text("${issued.slice(0, 12)}")`);
  assert.ok(!(await page.content()).includes(issued), "nor does the key's page");
  await screenshot(page, "admin-9-key-page");
});

test("revokes the key: the next API call with it is a 401", async () => {
  await page.goto(`${API_URL}/admin/accounts/apikey/?q=${encodeURIComponent(PROJECT)}`);
  await runAction("browser test", "revoke_keys");
  assert.match(await success(), /Revoked 1 key/);
  await screenshot(page, "admin-10-key-revoked");
  const me = await fetch(`${API_URL}/v1/me`, { headers: { Authorization: `Bearer ${issued}` } });
  assert.equal(me.status, 401);
  assert.equal((await me.json()).error.code, "UNAUTHENTICATED");
});

test("redelivers a failed delivery", async () => {
  const id = process.env.DELIVERY_ID;
  await page.goto(`${API_URL}/admin/webhooks/delivery/?status__exact=FAILED&q=${id}`);
  await screenshot(page, "admin-11-delivery-failed");
  await runAction(id, "redeliver");
  assert.match(await success(), /Re-queued 1 delivery/);
  await screenshot(page, "admin-12-delivery-requeued");
  // The worker sends it again (the receiver now answers 200): the delivery's page says so.
  await page.goto(`${API_URL}/admin/webhooks/delivery/${id}/change/`);
  const status = () => page.textContent(".field-status .readonly");
  for (let i = 0; i < 60 && !/Delivered/i.test(await status()); i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    await page.reload();
  }
  assert.match(await status(), /Delivered/i);
  await screenshot(page, "admin-13-delivery-delivered");
});
