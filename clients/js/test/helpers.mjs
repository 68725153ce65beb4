// Shared by the Node tests: the client under test (the built package), fixtures' bytes, and
// a webhook receiver on 127.0.0.1.
import { createServer } from "node:http";
import { deflateSync } from "node:zlib";

export const MIB = 1024 * 1024;

/** Pseudo-random bytes (a fixed seed: a failure repeats). */
export function bytes(size, seed = 1) {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function equalBytes(a, b) {
  return a.byteLength === b.byteLength && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}

function crc32(data) {
  let crc = ~0;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

/** A real PNG (RGB, a gradient) of the given size. */
export function png(width, height) {
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = y * (width * 3 + 1) + 1 + x * 3;
      rows[at] = (x * 255) / width;
      rows[at + 1] = (y * 255) / height;
      rows[at + 2] = 128;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** An HTTP receiver: every request's raw body and headers, answered with `status()`. */
export async function receiver(status = () => 200) {
  const requests = [];
  const waiters = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      requests.push({ headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(status()).end();
      for (const waiter of waiters.splice(0)) waiter();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    requests,
    /** The first request `match` accepts, within `ms`. */
    async wait(match, ms = 20_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = requests.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching request within ${ms} ms`);
        await new Promise((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 250);
        });
      }
    },
    close: () => closed(server),
  };
}

/** Stop `server` now: Node 18's close() waits out idle keep-alive connections (5 s) that
 * later versions end at once, so they are ended here too. */
export function closed(server) {
  return new Promise((resolve) => {
    server.close(resolve);
    server.closeAllConnections();
  });
}
