// Debian's Chromium, headless, driven by playwright-core (pinned in
// clients/js/package-lock.json). Never a browser download: the executable is the system's.
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(new URL("../../../clients/js/package.json", import.meta.url));
const { chromium } = require("playwright-core");

export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A browser context with a fresh profile (--user-data-dir); `close()` removes it. */
export async function launch() {
  const profile = await mkdtemp(join(tmpdir(), "chromium-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1100, height: 760 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** A screenshot into the test's artifacts folder (ARTIFACTS). */
export async function screenshot(page, name) {
  const folder = process.env.ARTIFACTS;
  if (folder) await page.screenshot({ path: join(folder, `${name}.png`), fullPage: true });
}
