/**
 * What `files.upload` takes: a path (Node), a Blob or File, bytes, or a stream. Each becomes
 * a ByteSource that the transfer reads a part at a time, so a large file on disk is never
 * held whole in memory.
 */
import { TransferError } from "./errors.js";
import { type ByteSource, memorySource } from "./transfer.js";

export type UploadSource =
  | string
  | Blob
  | Uint8Array
  | ArrayBuffer
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface OpenedSource extends ByteSource {
  name: string | null;
  type: string | null;
  /** Whether a part can be read again (for a resume, or to check a held part). */
  rereadable: boolean;
  close(): Promise<void>;
}

// The specifier in a variable: bundlers for browsers leave this Node-only import alone.
const NODE_FS = "node:fs/promises";

/** Open a source. A stream is read once, in order: with `size` its parts are read as they
 * go, without it the stream is read into memory first. */
export async function openSource(source: UploadSource, size?: number): Promise<OpenedSource> {
  if (typeof source === "string") return openPath(source);
  if (isBlob(source)) {
    const name = (source as { name?: unknown }).name;
    return inMemory(source, typeof name === "string" ? name : null, source.type || null);
  }
  if (source instanceof Uint8Array) return inMemory(source, null, null);
  if (source instanceof ArrayBuffer) return inMemory(new Uint8Array(source), null, null);
  const chunks = iterate(source);
  if (size !== undefined) return sequential(chunks, size);
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    parts.push(chunk);
    total += chunk.byteLength;
  }
  const whole = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return inMemory(whole, null, null);
}

function isBlob(source: unknown): source is Blob {
  return typeof Blob !== "undefined" && source instanceof Blob;
}

// The few calls of node:fs/promises used here (its types would tie browsers' to Node's).
interface FileHandle {
  stat(): Promise<{ size: number }>;
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

function inMemory(data: Blob | Uint8Array, name: string | null, type: string | null) {
  return { ...memorySource(data), name, type, rereadable: true, close: async () => {} };
}

async function openPath(path: string): Promise<OpenedSource> {
  const fs: { open(path: string, flags: string): Promise<FileHandle> } = await import(NODE_FS);
  const handle = await fs.open(path, "r");
  const { size } = await handle.stat();
  return {
    size,
    name: path.split(/[\\/]/).pop() || null,
    type: null,
    rereadable: true,
    async read(offset, length) {
      const buffer = new Uint8Array(length);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
        if (bytesRead === 0) throw new TransferError(`${path} is shorter than ${size} bytes now`);
        filled += bytesRead;
      }
      return buffer;
    },
    close: () => handle.close(),
  };
}

function iterate(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  if (Symbol.asyncIterator in source) return source as AsyncIterable<Uint8Array>;
  const reader = (source as ReadableStream<Uint8Array>).getReader();
  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    },
  };
}

/** A stream of a declared size, read part after part (the reads are queued in order). */
function sequential(chunks: AsyncIterable<Uint8Array>, size: number): OpenedSource {
  const iterator = chunks[Symbol.asyncIterator]();
  let position = 0;
  let leftover: Uint8Array = new Uint8Array(0);
  let queue: Promise<unknown> = Promise.resolve();
  const next = async (offset: number, length: number): Promise<Uint8Array> => {
    if (offset !== position) throw new TransferError("a stream's parts can only be read once");
    const out = new Uint8Array(length);
    let filled = 0;
    while (filled < length) {
      if (leftover.byteLength === 0) {
        const { done, value } = await iterator.next();
        if (done) throw new TransferError(`the stream ended before ${size} bytes`);
        leftover = value instanceof Uint8Array ? value : new Uint8Array(value);
      }
      const take = Math.min(length - filled, leftover.byteLength);
      out.set(leftover.subarray(0, take), filled);
      leftover = leftover.subarray(take);
      filled += take;
    }
    position += length;
    return out;
  };
  return {
    size,
    name: null,
    type: null,
    rereadable: false,
    read(offset, length) {
      const result = queue.then(() => next(offset, length));
      queue = result.catch(() => {});
      return result;
    },
    close: async () => {
      await iterator.return?.();
    },
  };
}

const TYPES: Record<string, string> = {
  avif: "image/avif",
  bin: "application/octet-stream",
  css: "text/css",
  csv: "text/csv",
  gif: "image/gif",
  gz: "application/gzip",
  htm: "text/html",
  html: "text/html",
  jpeg: "image/jpeg",
  jpg: "image/jpeg",
  js: "text/javascript",
  json: "application/json",
  md: "text/markdown",
  mov: "video/quicktime",
  mp3: "audio/mpeg",
  mp4: "video/mp4",
  pdf: "application/pdf",
  png: "image/png",
  svg: "image/svg+xml",
  tar: "application/x-tar",
  txt: "text/plain",
  wav: "audio/wav",
  webm: "video/webm",
  webp: "image/webp",
  xml: "application/xml",
  zip: "application/zip",
};

/** The content type of a filename's extension (application/octet-stream if unknown). */
export function guessContentType(filename: string): string {
  const extension = /\.([^.]+)$/.exec(filename)?.[1]?.toLowerCase() ?? "";
  return TYPES[extension] ?? "application/octet-stream";
}
