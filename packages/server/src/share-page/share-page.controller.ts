/**
 * @module server/share-page/share-page.controller
 * Serves the recipient page of share links (docs/sharing.md, "The recipient page"):
 * `GET /share/{token}` and `GET /share/folder/{token}` answer the same small HTML document,
 * whatever the token (the page itself asks the anonymous share routes), and the scripts built
 * from `src/share-page/` are served from `/share/assets/` and `/share/sw.js`. Every answer
 * carries a strict Content-Security-Policy (this origin only; no inline script or style),
 * `Referrer-Policy: no-referrer` and `X-Content-Type-Options: nosniff`; the page loads nothing
 * from another origin.
 */

import { sharePageAssets } from "@esync/share-page/build.ts";
import { ASSETS_PATH, SERVICE_WORKER_PATH } from "@esync/share-page/protocol.ts";
import { Elysia, t } from "elysia";

/** The Content-Security-Policy of the page and its scripts. */
export const SHARE_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "content-security-policy": SHARE_PAGE_CSP,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>Shared with you · esync</title>
<link rel="stylesheet" href="${ASSETS_PATH}/page.css">
<script type="module" src="${ASSETS_PATH}/page.js"></script>
</head>
<body>
<main data-state="loading"><p>Loading…</p><noscript><p>This page needs JavaScript: the file is decrypted in your browser.</p></noscript></main>
</body>
</html>
`;

function page(): Response {
  return new Response(HTML, {
    headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

async function asset(name: "page.js" | "argon2-worker.js" | "sw.js" | "page.css"): Promise<Response> {
  const body = (await sharePageAssets())[name];
  return new Response(body, {
    headers: {
      ...SECURITY_HEADERS,
      "content-type": name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
}

const Token = t.Object({ token: t.String({ pattern: "^[A-Za-z0-9_-]+$", maxLength: 256 }) });
const hidden = { detail: { hide: true } };

/** The page's routes (no token, no envelope). */
export function sharePageController() {
  // Build now (once per process), so the first visitor does not wait for the bundler.
  sharePageAssets().catch(() => {});
  return new Elysia({ name: "share-page" })
    .get(`${ASSETS_PATH}/page.js`, () => asset("page.js"), hidden)
    .get(`${ASSETS_PATH}/argon2-worker.js`, () => asset("argon2-worker.js"), hidden)
    .get(`${ASSETS_PATH}/page.css`, () => asset("page.css"), hidden)
    .get(SERVICE_WORKER_PATH, () => asset("sw.js"), hidden)
    .get("/share/folder/:token", page, { params: Token, ...hidden })
    .get("/share/:token", page, { params: Token, ...hidden });
}
