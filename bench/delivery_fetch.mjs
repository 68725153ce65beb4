// The end-to-end side of bench/delivery.py: fetches every URL of a file (one a line) as a
// browser fetches a page's images: redirects followed, CONCURRENCY requests in flight (a
// browser's six connections per host), keep-alive connections, each body read whole, nothing
// cached. The first WARMUP URLs are fetched once unmeasured (connections opened, code warm).
// Prints one JSON line: {seconds, count, bytes, failures, cpuSeconds}.
import { readFileSync } from "node:fs";

const urls = readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean);
const concurrency = Number(process.env.CONCURRENCY || 6);
const warmup = Number(process.env.WARMUP || 50);
// What Chromium sends for an <img>.
const accept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

async function fetchAll(list) {
  let next = 0;
  let bytes = 0;
  let failures = 0;
  async function worker() {
    while (next < list.length) {
      const answer = await fetch(list[next++], { headers: { accept }, redirect: "follow" });
      const body = await answer.arrayBuffer();
      if (answer.status === 200) bytes += body.byteLength;
      else failures += 1;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { bytes, failures };
}

await fetchAll(urls.slice(0, warmup));
const cpu = process.cpuUsage();
const started = performance.now();
const { bytes, failures } = await fetchAll(urls);
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
console.log(
  JSON.stringify({
    seconds,
    count: urls.length,
    bytes,
    failures,
    cpuSeconds: (used.user + used.system) / 1e6,
  }),
);
