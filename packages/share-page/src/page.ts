/**
 * @module share-page/page
 * The recipient page of a share link (docs/sharing.md, "The recipient page"). It reads the key
 * from the URL fragment (`#k=`, or `#p=` after asking for the password, whose Argon2id step runs
 * in a Web Worker), fetches the share's metadata, and offers the file (or, for a folder share,
 * the directory tree) for download. Downloads are decrypted by the service worker as they
 * stream; without one, files up to `IN_MEMORY_LIMIT` are decrypted into memory.
 *
 * The page talks only to its own origin and never sends the fragment anywhere. `<main>` carries
 * `data-state` (`loading`, `password`, `ready`, `error`) and, on errors, `data-error` (`bad_link`,
 * `wrong_password`, `wrong_key`, `expired`, `revoked`, `failed`) for tests and styling.
 */
import { CiphertextError, decryptStream } from "@esync/client/frame.ts";
import {
  decryptFileName,
  fromBase64,
  openShareWrap,
  parseShareFragment,
  SHARE_TOKEN_RE,
  type ShareSecret,
  ShareSecretError,
  shareWrapSalt,
} from "@esync/client/share-crypto.ts";
import type { FileShareMeta, FolderShareMeta, FolderSharePage } from "@esync/client/share-types.ts";
import {
  type Argon2Request,
  type Argon2Response,
  ASSETS_PATH,
  DOWNLOAD_PATH,
  type DownloadEvent,
  type DownloadJob,
  IN_MEMORY_LIMIT,
  SERVICE_WORKER_PATH,
  SHARE_SCOPE,
} from "./protocol.ts";

type ErrorKind = "bad_link" | "wrong_password" | "wrong_key" | "expired" | "used_up" | "revoked" | "failed";

const MESSAGES: Record<ErrorKind, { title: string; text: string }> = {
  bad_link: {
    title: "This link is incomplete",
    text: "The part after # that holds the key is missing or damaged. Ask the sender for the whole link.",
  },
  wrong_password: { title: "Wrong password", text: "That password does not open this link. Try again." },
  wrong_key: {
    title: "This link's key does not fit",
    text: "The key in the link does not decrypt this share. The link may have been cut or altered; ask the sender for it again.",
  },
  expired: {
    title: "This link has expired",
    text: "The sender set it to stop working; ask them for a new one.",
  },
  used_up: {
    title: "This link has been used up",
    text: "The sender allowed only a set number of downloads, and they have all been made. Ask the sender for a new link.",
  },
  revoked: {
    title: "This link no longer works",
    text: "The sender revoked it, or it never existed. Ask the sender for a new one.",
  },
  failed: { title: "Something went wrong", text: "The share could not be loaded. Try again later." },
};

/** A share request that failed with an HTTP status. */
class HttpError extends Error {
  /** `reason` of the flat error body (`download_limit` for a used-up link), when there is one. */
  constructor(
    readonly status: number,
    readonly reason?: string,
  ) {
    super(`the server answered ${status}`);
  }
}

const main = document.querySelector("main") as HTMLElement;

/** An element with attributes and children (text is always set as text, never parsed as HTML). */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

function show(state: string, ...children: Node[]): void {
  main.dataset.state = state;
  delete main.dataset.error;
  main.replaceChildren(...children);
}

function showError(kind: ErrorKind, detail?: string): void {
  const m = MESSAGES[kind];
  show("error", h("h1", {}, m.title), h("p", { class: "message" }, m.text));
  main.dataset.error = kind;
  if (detail) main.append(h("p", { class: "detail" }, detail));
}

/** `1.5 MiB`-style size. */
function formatSize(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${bytes} bytes` : `${v.toFixed(1)} ${units[u]}`;
}

function formatExpiry(expiresAt: string | null): string {
  return expiresAt === null ? "never" : new Date(expiresAt).toLocaleString();
}

function kindOfStatus(status: number, reason?: string): ErrorKind {
  if (status === 410) return reason === "download_limit" ? "used_up" : "expired";
  return status === 404 ? "revoked" : "failed";
}

/** The error shown for a failed request: a used-up link is told apart from an expired one. */
function kindOfError(err: unknown): ErrorKind {
  return err instanceof HttpError ? kindOfStatus(err.status, err.reason) : "failed";
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { credentials: "omit", cache: "no-store" });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { reason?: unknown } | null;
    throw new HttpError(res.status, typeof body?.reason === "string" ? body.reason : undefined);
  }
  return (await res.json()) as T;
}

/** The key of a `#p=` link: asks for the password until it opens the wrap. */
function askPassword(wrap: Uint8Array): Promise<Uint8Array> {
  const salt = shareWrapSalt(wrap);
  return new Promise((resolve) => {
    const input = h("input", {
      type: "password",
      id: "password",
      autocomplete: "off",
      required: "",
      "aria-label": "Password",
    });
    const button = h("button", { type: "submit", id: "unlock" }, "Open");
    const note = h("p", { class: "note", id: "password-note" });
    const form = h(
      "form",
      {},
      h("label", { for: "password" }, "This link is protected by a password."),
      input,
      button,
      note,
    );
    show("password", h("h1", {}, "Password required"), form);
    input.focus();
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      button.disabled = true;
      note.textContent = "Checking…";
      const worker = new Worker(`${ASSETS_PATH}/argon2-worker.js`, { type: "module" });
      worker.onmessage = (e: MessageEvent<Argon2Response>) => {
        worker.terminate();
        try {
          resolve(openShareWrap(wrap, e.data.key));
        } catch {
          button.disabled = false;
          main.dataset.error = "wrong_password";
          note.textContent = `${MESSAGES.wrong_password.title}. ${MESSAGES.wrong_password.text}`;
          note.className = "note error";
          input.select();
        }
      };
      worker.postMessage({ password: input.value, salt } satisfies Argon2Request);
    });
  });
}

let serviceWorker: Promise<ServiceWorker | null> | null = null;

/** The active service worker of the page's scope, or null where the browser has none. */
function downloadWorker(): Promise<ServiceWorker | null> {
  serviceWorker ??= (async () => {
    if (!("serviceWorker" in navigator)) return null;
    try {
      await navigator.serviceWorker.register(SERVICE_WORKER_PATH, { scope: SHARE_SCOPE });
      const reg = await navigator.serviceWorker.ready;
      return reg.active;
    } catch {
      return null;
    }
  })();
  return serviceWorker;
}

/** A progress bar and its caption, updated by `set(bytes)`. */
function progressBar(total: number) {
  const bar = h("progress", { max: String(Math.max(total, 1)), value: "0" });
  const caption = h("span", { class: "progress-text" }, "");
  const box = h("div", { class: "progress" }, bar, caption);
  return {
    box,
    set(bytes: number, text?: string) {
      bar.value = bytes;
      caption.textContent = text ?? `${formatSize(bytes)} of ${formatSize(total)}`;
    },
  };
}

/** What a download needs: where the blob is, its key, and what to call the file. */
interface DownloadTarget {
  url: string;
  key: Uint8Array;
  name: string;
  mime: string;
  size: number;
}

function describeFailure(ev: Extract<DownloadEvent, { type: "error" }>): ErrorKind {
  if (ev.status !== undefined) return kindOfStatus(ev.status, ev.reason);
  if (ev.reason === "authentication_failed") return "wrong_key";
  return "failed";
}

/**
 * Downloads `t`: through the service worker (streamed), else into memory up to
 * `IN_MEMORY_LIMIT`. Resolves when the file was handed to the browser in full; reports
 * through `status` and `onError`.
 */
async function download(
  t: DownloadTarget,
  progress: ReturnType<typeof progressBar>,
  onError: (kind: ErrorKind, detail: string) => void,
): Promise<boolean> {
  const sw = await downloadWorker();
  if (!sw) return downloadInMemory(t, progress, onError);
  const id = crypto.randomUUID();
  const channel = new MessageChannel();
  const done = new Promise<boolean>((resolve) => {
    channel.port1.onmessage = (e: MessageEvent<DownloadEvent>) => {
      const ev = e.data;
      if (ev.type === "ready") {
        const frame = h("iframe", { src: `${DOWNLOAD_PATH}${id}`, hidden: "", title: "download" });
        document.body.append(frame);
        setTimeout(() => frame.remove(), 60_000);
      } else if (ev.type === "progress") progress.set(ev.bytes);
      else if (ev.type === "done") {
        progress.set(ev.bytes, `${formatSize(ev.bytes)}: done`);
        resolve(true);
      } else {
        onError(describeFailure(ev), ev.message);
        resolve(false);
      }
    };
  });
  const job: DownloadJob = { type: "download", id, ...t };
  sw.postMessage(job, [channel.port2]);
  return done;
}

async function downloadInMemory(
  t: DownloadTarget,
  progress: ReturnType<typeof progressBar>,
  onError: (kind: ErrorKind, detail: string) => void,
): Promise<boolean> {
  if (t.size > IN_MEMORY_LIMIT) {
    onError(
      "failed",
      `This browser cannot stream downloads here (no service worker), and files over ${formatSize(IN_MEMORY_LIMIT)} are too large to decrypt in memory. Open the link in a current Chrome, Edge or Firefox over HTTPS.`,
    );
    return false;
  }
  const res = await fetch(t.url, { credentials: "omit", cache: "no-store" });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => null)) as { reason?: unknown } | null;
    const reason = typeof body?.reason === "string" ? body.reason : undefined;
    onError(kindOfStatus(res.status, reason), `the server answered ${res.status}`);
    return false;
  }
  const parts: Uint8Array<ArrayBuffer>[] = [];
  let bytes = 0;
  try {
    const reader = decryptStream(t.key, res.body, { expectedPlaintextSize: t.size }).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value as Uint8Array<ArrayBuffer>);
      bytes += value.byteLength;
      progress.set(bytes);
    }
  } catch (err) {
    onError(
      err instanceof CiphertextError && err.reason === "authentication_failed" ? "wrong_key" : "failed",
      String(err),
    );
    return false;
  }
  const url = URL.createObjectURL(new Blob(parts, { type: t.mime }));
  const a = h("a", { href: url, download: t.name });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  progress.set(bytes, `${formatSize(bytes)}: done`);
  return true;
}

/** A download button with its progress bar and error line. */
function downloadControl(label: string, target: () => DownloadTarget): HTMLElement {
  const button = h("button", { type: "button", class: "download" }, label);
  const progress = progressBar(target().size);
  const error = h("p", { class: "note error" });
  const box = h("div", { class: "download-box" }, button, progress.box, error);
  button.addEventListener("click", async () => {
    button.disabled = true;
    error.textContent = "";
    progress.set(0);
    box.dataset.download = "running";
    const ok = await download(target(), progress, (kind, detail) => {
      error.textContent = `${MESSAGES[kind].title}. ${MESSAGES[kind].text}`;
      error.title = detail;
      box.dataset.error = kind;
    });
    box.dataset.download = ok ? "done" : "failed";
    button.disabled = false;
  });
  return box;
}

async function openFileShare(token: string, key: Uint8Array): Promise<void> {
  const meta = await getJson<FileShareMeta>(`/v1/shares/${token}/meta`);
  let name: string;
  try {
    name = decryptFileName(fromBase64(meta.filename_ct), fromBase64(meta.filename_nonce), key);
  } catch {
    showError("wrong_key");
    return;
  }
  const target = (): DownloadTarget => ({
    url: `/v1/shares/${token}/blob`,
    key,
    name,
    mime: meta.mime_type || "application/octet-stream",
    size: meta.plaintext_size,
  });
  show(
    "ready",
    h("h1", { id: "file-name" }, name),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Size"),
      h("dd", { id: "file-size" }, formatSize(meta.plaintext_size)),
      h("dt", {}, "Expires"),
      h("dd", { id: "expires" }, formatExpiry(meta.expires_at)),
    ),
    downloadControl("Download", target),
    h(
      "p",
      { class: "note" },
      "The file is decrypted in this browser; the server never sees its contents or name.",
    ),
  );
}

async function openFolderShare(token: string, key: Uint8Array): Promise<void> {
  const meta = await getJson<FolderShareMeta>(`/v1/folder-shares/${token}/meta`);
  const listing = h("div", { id: "listing" });
  const crumbs = h("nav", { id: "crumbs", "aria-label": "Path" });
  show(
    "ready",
    h("h1", { id: "display-name" }, meta.display_name),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Expires"),
      h("dd", { id: "expires" }, formatExpiry(meta.expires_at)),
    ),
    crumbs,
    listing,
  );

  const browse = async (path: string): Promise<void> => {
    crumbs.replaceChildren();
    const segments = path === "" ? [] : path.split("/");
    const crumb = (label: string, to: string) => {
      const b = h("button", { type: "button", class: "crumb", "data-path": to }, label);
      b.addEventListener("click", () => void browse(to));
      return b;
    };
    crumbs.append(crumb(meta.display_name, ""));
    segments.forEach((s, i) => {
      crumbs.append(" / ", crumb(s, segments.slice(0, i + 1).join("/")));
    });
    listing.replaceChildren(h("p", {}, "Loading…"));
    main.dataset.path = path;
    const dirs = h("ul", { class: "dirs" });
    const files = h("ul", { class: "files" });
    let offset = 0;
    const more = h("button", { type: "button", class: "more", hidden: "" }, "More files");
    const loadPage = async () => {
      const qs = new URLSearchParams({ offset: String(offset) });
      if (path !== "") qs.set("path", path);
      let page: FolderSharePage;
      try {
        page = await getJson<FolderSharePage>(`/v1/folder-shares/${token}/browse?${qs}`);
      } catch (err) {
        showError(kindOfError(err), String(err));
        return;
      }
      for (const d of page.directories) {
        const to = path === "" ? d.name : `${path}/${d.name}`;
        const b = h("button", { type: "button", class: "dir", "data-path": to }, `${d.name}/`);
        b.addEventListener("click", () => void browse(to));
        dirs.append(
          h(
            "li",
            {},
            b,
            h("span", { class: "meta" }, ` ${d.file_count} file(s), ${formatSize(d.total_bytes)}`),
          ),
        );
      }
      for (const f of page.files) {
        const item = h(
          "li",
          { "data-file": f.path },
          h("span", { class: "name" }, f.name),
          h("span", { class: "meta" }, ` ${formatSize(f.size_bytes)}`),
        );
        item.append(
          downloadControl("Download", () => ({
            url: `/v1/folder-shares/${token}/blob?${new URLSearchParams({ path: f.path })}`,
            key,
            name: f.name,
            mime: "application/octet-stream",
            size: f.size_bytes,
          })),
        );
        files.append(item);
      }
      offset += page.files.length;
      more.hidden = !page.has_more;
    };
    more.addEventListener("click", () => void loadPage());
    await loadPage();
    if (main.dataset.state !== "ready") return;
    listing.replaceChildren(dirs, files, more);
    if (dirs.childElementCount === 0 && files.childElementCount === 0)
      listing.append(h("p", { class: "note" }, "This directory is empty."));
  };
  await browse("");
}

/** Reads the link, unlocks its key and opens the share. */
async function start(): Promise<void> {
  const parts = location.pathname.split("/").filter((p) => p !== "");
  const folder = parts[1] === "folder";
  const token = folder ? parts[2] : parts[1];
  if (!token || !SHARE_TOKEN_RE.test(token)) {
    showError("bad_link");
    return;
  }
  let secret: ShareSecret;
  try {
    secret = parseShareFragment(location.hash);
  } catch {
    showError("bad_link");
    return;
  }
  let key = secret.material;
  if (secret.password) {
    try {
      key = await askPassword(secret.material);
    } catch (err) {
      showError(err instanceof ShareSecretError ? "bad_link" : "failed", String(err));
      return;
    }
  }
  show("loading", h("p", {}, "Loading…"));
  // Start the service worker now, so that it is ready when the download starts.
  void downloadWorker();
  try {
    if (folder) await openFolderShare(token, key);
    else await openFileShare(token, key);
  } catch (err) {
    showError(kindOfError(err), String(err));
  }
}

void start();
