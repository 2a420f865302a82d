/**
 * The recipient page's routes (docs/sharing.md, "The recipient page"): the same HTML for a file
 * and a folder link, scripts built from src/share-page/, and the security headers on every answer.
 */
import { describe, expect, test } from "bun:test";
import { SHARE_PAGE_CSP, sharePageController } from "@esync/server/share-page/share-page.controller.ts";
import { Elysia } from "elysia";

const app = new Elysia().use(sharePageController());
const get = (path: string) => app.handle(new Request(`http://127.0.0.1${path}`));
const TOKEN = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";

describe("the share page routes", () => {
  for (const path of [`/share/${TOKEN}`, `/share/folder/${TOKEN}`]) {
    test(`GET ${path.replace(TOKEN, "{token}")} answers 200 HTML with a strict CSP and no referrer`, async () => {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("content-security-policy")).toBe(SHARE_PAGE_CSP);
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const html = await res.text();
      expect(html).toContain('<script type="module" src="/share/assets/page.js">');
      // Nothing from another origin, and no inline script.
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
      expect(html).not.toMatch(/<script(?![^>]*src=)/);
    });
  }

  test("the CSP allows this origin only, with no inline script or style", () => {
    expect(SHARE_PAGE_CSP).toContain("default-src 'none'");
    expect(SHARE_PAGE_CSP).toContain("script-src 'self'");
    expect(SHARE_PAGE_CSP).not.toContain("unsafe");
    expect(SHARE_PAGE_CSP).not.toMatch(/https?:/);
  });

  for (const asset of ["/share/assets/page.js", "/share/assets/argon2-worker.js", "/share/sw.js"])
    test(`GET ${asset} serves the bundled script with the same headers`, async () => {
      const res = await get(asset);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(res.headers.get("content-security-policy")).toBe(SHARE_PAGE_CSP);
      const js = await res.text();
      expect(js.length).toBeGreaterThan(1000);
      expect(js).not.toMatch(/\bimport\s*\(|from\s*"[^"]+"/); // one self-contained bundle
    });

  test("a path that is not a token is not the page", async () => {
    expect((await get("/share/a.b")).status).not.toBe(200);
  });
});
