// The browser side of bench/browser_upload.py: one headless Chromium (Debian's) opens the
// browser-upload example at EXAMPLE_URL, picks FILE in the page's file input (or, without
// FILE, makes SIZE random bytes into a File in memory), prints "ready", then uploads that
// File on each line that arrives on stdin:
// - "upload": through the example's server (start there, uploadParts with CONCURRENCY parts
//   at a time to the store, complete there); one JSON line
//   {seconds, startMs, partsMs, completeMs, partSize, fileId};
// - "token <ut_…> <api base URL>": with the token alone, straight to the API
//   (uploadWithToken, CONCURRENCY parts at a time); one JSON line {seconds, partSize, fileId}.
// The same browser serves every round, so the Python side's rounds can be interleaved with it.
import { createInterface } from "node:readline";

import { launch } from "../tests/js/browser/chromium.mjs";

const { EXAMPLE_URL, SIZE, CONCURRENCY, FILE } = process.env;
const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(EXAMPLE_URL);
  await page.waitForFunction(() => window.storageExample !== undefined);
  if (FILE) {
    // The file on disk the Python client sends, picked in the page's own file input as a
    // user picks one: a File backed by the disk, as a real upload's is.
    await page.setInputFiles("#file", FILE);
    await page.evaluate(async () => {
      window.benchFile = document.querySelector("#file").files[0];
      await import("storage-service-client/browser");
    });
  } else {
    // Bytes made in the page, once (a Blob in the browser's memory).
    await page.evaluate(async (size) => {
      const data = new Uint8Array(size);
      for (let at = 0; at < size; at += 65536) crypto.getRandomValues(data.subarray(at, at + 65536));
      window.benchFile = new File([data], "bench.bin", { type: "application/octet-stream" });
      // Read once, so the browser holds the whole File before the first round.
      await window.benchFile.slice(size - 1).arrayBuffer();
      await import("storage-service-client/browser");
    }, Number(SIZE));
  }
  console.log("ready");
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, token, baseUrl] = line.trim().split(" ");
    if (command === "token") {
      const result = await page.evaluate(
        async ({ concurrency, token, baseUrl }) => {
          const { uploadWithToken } = await import("storage-service-client/browser");
          const file = window.benchFile;
          const started = performance.now();
          const stored = await uploadWithToken(file, { token, baseUrl, concurrency });
          const ended = performance.now();
          if (stored.status !== "uploaded" || stored.size !== file.size) throw new Error("not stored");
          return { seconds: (ended - started) / 1000, fileId: stored.id };
        },
        { concurrency: Number(CONCURRENCY), token, baseUrl },
      );
      console.log(JSON.stringify(result));
      continue;
    }
    if (command !== "upload") continue;
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
      const sending = performance.now();
      const parts = await uploadParts(file, session, { concurrency });
      const completing = performance.now();
      const { file: stored } = await post(`/api/multipart/${session.id}/complete`, { parts });
      const ended = performance.now();
      if (stored.status !== "uploaded" || stored.size !== file.size) throw new Error("not stored");
      return {
        seconds: (ended - started) / 1000,
        startMs: Math.round(sending - started),
        partsMs: Math.round(completing - sending),
        completeMs: Math.round(ended - completing),
        partSize: session.partSize,
        fileId: stored.id,
      };
    }, Number(CONCURRENCY));
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close();
}
