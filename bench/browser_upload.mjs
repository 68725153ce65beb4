// The browser side of bench/browser_upload.py: headless Chromium (Debian's) opens the
// browser-upload example at EXAMPLE_URL and uploads SIZE random bytes through uploadParts
// (CONCURRENCY parts at a time) ROUNDS times: start on the example's server, PUT the parts to
// the store, complete. Prints one JSON line per round: {seconds, fileId}.
import { launch } from "../tests/js/browser/chromium.mjs";

const { EXAMPLE_URL, SIZE, CONCURRENCY, ROUNDS } = process.env;
const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(EXAMPLE_URL);
  await page.waitForFunction(() => window.storageExample !== undefined);
  // The bytes are made once, in the page, before any timing (as a file a user picked).
  await page.evaluate((size) => {
    const data = new Uint8Array(size);
    for (let at = 0; at < size; at += 65536) crypto.getRandomValues(data.subarray(at, at + 65536));
    window.benchFile = new File([data], "bench.bin", { type: "application/octet-stream" });
  }, Number(SIZE));
  for (let round = 0; round < Number(ROUNDS); round++) {
    const result = await page.evaluate(async (concurrency) => {
      const { uploadParts } = await import("storage-service-client/browser");
      const file = window.benchFile;
      const post = async (path, body = {}) => {
        const answer = await fetch(path, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body),
        });
        if (!answer.ok) throw new Error(`${path}: ${answer.status} ${await answer.text()}`);
        return answer.json();
      };
      const started = performance.now();
      const { session } = await post("/api/uploads", {
        filename: file.name,
        contentType: file.type,
        size: file.size,
      });
      const parts = await uploadParts(file, session, { concurrency });
      const { file: stored } = await post(`/api/multipart/${session.id}/complete`, { parts });
      const seconds = (performance.now() - started) / 1000;
      if (stored.status !== "uploaded" || stored.size !== file.size) throw new Error("not stored");
      return { seconds, fileId: stored.id };
    }, Number(CONCURRENCY));
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close();
}
