/**
 * @module share-page/sw
 * The recipient page's service worker. The page posts a `DownloadJob` (blob URL, key, name,
 * size) and then opens `/share/dl/{id}` in a hidden frame; this worker answers that request with
 * the blob fetched from the server and decrypted frame by frame as it streams, as an attachment.
 * The browser writes it to disk as it arrives, so no more than a few frames are ever in memory,
 * whatever the file's size. A frame that fails authentication (wrong key, altered blob) ends the
 * download with an error and is reported to the page.
 */
import { CiphertextError, decryptStream } from "@esync/client/frame.ts";
import { DOWNLOAD_PATH, type DownloadEvent, type DownloadJob } from "./protocol.ts";

/** The parts of the service worker global scope used here (the DOM library does not type it). */
interface WorkerScope {
  location: Location;
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  addEventListener(
    type: "install" | "activate",
    fn: (e: { waitUntil(p: Promise<unknown>): void }) => void,
  ): void;
  addEventListener(type: "message", fn: (e: MessageEvent<DownloadJob>) => void): void;
  addEventListener(
    type: "fetch",
    fn: (e: { request: Request; respondWith(r: Response | Promise<Response>): void }) => void,
  ): void;
}
const scope = self as unknown as WorkerScope;

interface PendingJob extends DownloadJob {
  port: MessagePort;
}
const jobs = new Map<string, PendingJob>();

scope.addEventListener("install", (e) => e.waitUntil(scope.skipWaiting()));
scope.addEventListener("activate", (e) => e.waitUntil(scope.clients.claim()));

scope.addEventListener("message", (e) => {
  const port = e.ports[0];
  if (e.data?.type !== "download" || !port) return;
  jobs.set(e.data.id, { ...e.data, port });
  port.postMessage({ type: "ready" } satisfies DownloadEvent);
});

scope.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  if (url.origin !== scope.location.origin || !url.pathname.startsWith(DOWNLOAD_PATH)) return;
  const id = url.pathname.slice(DOWNLOAD_PATH.length);
  const job = jobs.get(id);
  jobs.delete(id);
  if (!job) {
    e.respondWith(
      new Response("This download has expired; start it again from the share page.", {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      }),
    );
    return;
  }
  e.respondWith(serve(job));
});

/** RFC 6266 `Content-Disposition` of an attachment named `name` (UTF-8 and an ASCII fallback). */
function disposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

async function serve(job: PendingJob): Promise<Response> {
  const post = (m: DownloadEvent) => job.port.postMessage(m);
  let res: Response;
  try {
    res = await fetch(job.url, { credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer" });
  } catch (err) {
    post({ type: "error", reason: "network", message: String(err) });
    return new Response(null, { status: 204 });
  }
  if (!res.ok || !res.body) {
    // The flat error body's `reason` tells a used-up link (`download_limit`) from an expired one.
    const body = (await res.json().catch(() => null)) as { reason?: unknown } | null;
    const reason = typeof body?.reason === "string" ? body.reason : "http";
    post({ type: "error", status: res.status, reason, message: `the server answered ${res.status}` });
    return new Response(null, { status: 204 });
  }
  const reader = decryptStream(job.key, res.body, { expectedPlaintextSize: job.size }).getReader();
  let bytes = 0;
  let lastPost = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            post({ type: "done", bytes });
            controller.close();
            return;
          }
          bytes += value.byteLength;
          const now = Date.now();
          if (now - lastPost > 100) {
            lastPost = now;
            post({ type: "progress", bytes });
          }
          controller.enqueue(value);
        } catch (err) {
          const reason = err instanceof CiphertextError ? err.reason : "network";
          post({ type: "error", reason, message: err instanceof Error ? err.message : String(err) });
          controller.error(err);
        }
      },
      cancel(reason) {
        post({ type: "error", reason: "cancelled", message: "the download was cancelled" });
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 1 },
  );
  return new Response(body, {
    headers: {
      "content-type": "application/octet-stream",
      "content-disposition": disposition(job.name),
      "content-length": String(job.size),
      "cache-control": "no-store",
    },
  });
}
