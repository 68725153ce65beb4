// The page: it asks its server to start an upload, PUTs the bytes to the store itself, and
// asks its server to complete. It never sees an API key.
import { uploadParts, uploadWithDescriptor } from "storage-service-client/browser";

async function api(path, body = {}) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error ?? `HTTP ${response.status}`);
  return answer;
}

/** Start an upload of a File or Blob on this site's server. */
export function start(file, { filename = file.name, contentType = file.type } = {}) {
  return api("/api/uploads", { filename, contentType, size: file.size });
}

/** Send the bytes of a started upload, then have the server complete it. */
export async function send(file, started, { onProgress, signal, completed } = {}) {
  if (started.kind === "single") {
    await uploadWithDescriptor(file, started.upload, { onProgress, signal });
    return (await api(`/api/uploads/${started.fileId}/complete`)).file;
  }
  const id = started.session.id;
  const parts = await uploadParts(file, started.session, {
    concurrency: 4,
    onProgress,
    signal,
    completed,
    signMore: async (partNumbers) => (await api(`/api/multipart/${id}/sign`, { partNumbers })).parts,
  });
  return (await api(`/api/multipart/${id}/complete`, { parts })).file;
}

/** Start, send and complete. */
export async function upload(file, options = {}) {
  return send(file, await start(file), options);
}

/** A short-lived link to download an uploaded file. */
export async function downloadUrl(fileId) {
  return (await api(`/api/files/${fileId}/download-url`)).url;
}

// The form.
const form = document.querySelector("#upload");
const input = document.querySelector("#file");
const cancel = document.querySelector("#cancel");
const progress = document.querySelector("#progress");
const status = document.querySelector("#status");
let controller = null;

export function show(text, { error = false } = {}) {
  status.textContent = text;
  status.classList.toggle("error", error);
}

/** Say that a file was stored, and list it with a link to download it. */
export function uploaded(stored) {
  show(`Uploaded ${stored.filename} (${stored.size} bytes) as ${stored.id}.`);
  const item = document.createElement("li");
  const link = document.createElement("a");
  link.textContent = stored.id;
  link.href = "#";
  link.addEventListener("click", async (click) => {
    click.preventDefault();
    window.open(await downloadUrl(stored.id), "_blank");
  });
  item.append(link, ` ${stored.filename}, ${stored.size} bytes`);
  document.querySelector("#uploaded").append(item);
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const file = input.files[0];
  if (!file) return;
  controller = new AbortController();
  cancel.disabled = false;
  progress.value = 0;
  show(`Uploading ${file.name}…`);
  try {
    const stored = await upload(file, {
      signal: controller.signal,
      onProgress: ({ loaded, total }) => {
        progress.value = total ? (100 * loaded) / total : 100;
      },
    });
    uploaded(stored);
  } catch (error) {
    show(error.name === "AbortError" ? "Cancelled." : `Upload failed: ${error.message}`, {
      error: true,
    });
  } finally {
    cancel.disabled = true;
  }
});
cancel.addEventListener("click", () => controller?.abort());

// For a console (and the example's browser test): the same functions the form uses.
window.storageExample = { start, send, upload, downloadUrl, show, uploaded };
