// The application's server: it holds the API key, starts and completes uploads, and serves a
// page that sends the bytes straight to the store. The key never leaves this process: the page
// receives only presigned URLs, which allow one upload's PUTs and nothing else.
//
//   STORAGE_API_KEY=sk_test_... STORAGE_BASE_URL=http://127.0.0.1:8000 node server.mjs
//
// Then open http://localhost:3000 (PORT changes the port). The store must allow this
// origin (CORS): `make run` allows http://localhost:3000 and http://127.0.0.1:3000.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

// In an application: import { StorageClient } from "storage-service-client";
import { StorageClient, StorageError } from "../../clients/js/dist/index.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../clients/js/dist/", import.meta.url));
const MIB = 1024 * 1024;
// What this application accepts; the service enforces its own limits as well.
const MAX_SIZE = 1024 * MIB;
// Files this size or larger go up in parts (the service's parts are 8 MiB at least).
const MULTIPART_FROM = 16 * MIB;

const client = new StorageClient(); // STORAGE_API_KEY, STORAGE_BASE_URL
// What this server handed out, so a page can only sign or complete its own uploads. A real
// application keeps them with the signed-in user's session.
const started = new Map(); // fileId or uploadId -> { fileId, uploadId? }

const routes = {
  /** Start an upload: a descriptor (one PUT) or a multipart session, never a key. */
  "POST /api/uploads": async ({ filename, contentType, size, path }) => {
    if (typeof filename !== "string" || !filename) return [400, { error: "filename is needed" }];
    if (!Number.isInteger(size) || size < 0 || size > MAX_SIZE) {
      return [400, { error: `size must be 0 to ${MAX_SIZE} bytes` }];
    }
    const declared = {
      filename,
      contentType: contentType || "application/octet-stream",
      size,
      path: path ?? "browser",
    };
    if (size < MULTIPART_FROM) {
      const { file, upload } = await client.files.startUpload(declared);
      started.set(file.id, { fileId: file.id });
      return [201, { kind: "single", fileId: file.id, upload }];
    }
    const { file, upload } = await client.uploads.create(declared);
    started.set(upload.id, { fileId: file.id, uploadId: upload.id });
    return [201, { kind: "multipart", fileId: file.id, session: upload }];
  },
  /** Finish a single upload once the page's PUT is done. */
  "POST /api/uploads/:id/complete": async (body, id) => {
    const upload = started.get(id);
    if (!upload || upload.uploadId) return [404, { error: "no such upload" }];
    return [200, { file: await client.files.complete(id) }];
  },
  /** Fresh URLs for parts whose URL expired (the page's signMore). */
  "POST /api/multipart/:id/sign": async ({ partNumbers }, id) => {
    if (!started.get(id)?.uploadId) return [404, { error: "no such upload" }];
    return [200, { parts: await client.uploads.signParts(id, partNumbers) }];
  },
  /** The parts the store holds (to resume after the page was reloaded). */
  "POST /api/multipart/:id/parts": async (body, id) => {
    if (!started.get(id)?.uploadId) return [404, { error: "no such upload" }];
    return [200, { parts: await client.uploads.parts(id) }];
  },
  /** Assemble the parts the page sent. */
  "POST /api/multipart/:id/complete": async ({ parts }, id) => {
    const upload = started.get(id);
    if (!upload?.uploadId) return [404, { error: "no such upload" }];
    const file = await client.uploads.complete(id, parts, { fileId: upload.fileId });
    return [200, { file }];
  },
  /** A short-lived link to a file this server uploaded. */
  "POST /api/files/:id/download-url": async (body, id) => {
    const known = [...started.values()].some((upload) => upload.fileId === id);
    if (!known) return [404, { error: "no such file" }];
    return [200, await client.files.downloadUrl(id, { expiresInSeconds: 300 })];
  },
};

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css" };

async function serveFile(response, root, relative) {
  const path = normalize(join(root, relative));
  if (!path.startsWith(root) || !(extname(path) in TYPES)) return false;
  try {
    const body = await readFile(path);
    response.writeHead(200, { "Content-Type": TYPES[extname(path)] }).end(body);
    return true;
  } catch {
    return false;
  }
}

async function handle(request, response) {
  const url = new URL(request.url, "http://localhost");
  if (request.method === "GET") {
    const served = url.pathname.startsWith("/vendor/storage-service-client/")
      ? await serveFile(response, PACKAGE, url.pathname.slice(31))
      : await serveFile(response, join(HERE, "public"), url.pathname === "/" ? "index.html" : url.pathname);
    if (!served) response.writeHead(404).end();
    return;
  }
  const parts = url.pathname.split("/");
  const id = parts[3];
  const pattern = parts.map((part, i) => (i === 3 && parts.length > 4 ? ":id" : part)).join("/");
  const route = routes[`${request.method} ${pattern}`];
  if (!route) return send(response, 404, { error: "not found" });
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  let body;
  try {
    body = chunks.length ? JSON.parse(Buffer.concat(chunks)) : {};
  } catch {
    return send(response, 400, { error: "the body is not JSON" });
  }
  try {
    const [status, answer] = await route(body, id);
    send(response, status, answer);
  } catch (error) {
    // The service's error, as the page may show it (its code and message, never the key).
    if (error instanceof StorageError && error.status && error.status < 500) {
      return send(response, error.status, { error: error.message, code: error.code });
    }
    console.error(error);
    send(response, 502, { error: "the storage service failed" });
  }
}

function send(response, status, body) {
  response.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
}

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
createServer(handle).listen(port, host, () => {
  console.log(`browser-upload example at http://${host === "127.0.0.1" ? "localhost" : host}:${port}`);
});
