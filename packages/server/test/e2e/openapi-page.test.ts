// biome-ignore-all lint/performance/useDomNodeTextContent: the test checks the text the page renders, which is innerText
/**
 * The OpenAPI page renders its operations in a real browser (Debian's Chromium through
 * puppeteer-core) with every request outside the server refused: the page works offline.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import puppeteer, { type Browser } from "puppeteer-core";
import { type ServerProcess, startServer } from "../support/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`openapi-page: ${CHROMIUM} is missing (apt-get install chromium); test skipped`);

let server: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  if (!hasChromium) return;
  server = await startServer({ env: { ESYNC_OPENAPI: "1" } });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(!hasChromium)("the /swagger page in Chromium", () => {
  test("renders every operation, with every request outside the server blocked and no document error", async () => {
    const doc = (await (await fetch(`${server.url}/swagger/json`)).json()) as {
      paths: Record<string, Record<string, { summary: string }>>;
    };
    const summaries = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.summary));
    expect(summaries.length).toBeGreaterThanOrEqual(14);
    const page = await browser.newPage();
    await page.setViewport({ width: 1600, height: 1200 });
    const outside: string[] = [];
    const failed: string[] = [];
    const warnings: string[] = [];
    await page.setRequestInterception(true);
    page.on("request", (req) => {
      const url = req.url();
      if (url.startsWith(server.url) || url.startsWith("data:") || url.startsWith("blob:"))
        void req.continue();
      else {
        outside.push(url);
        void req.abort();
      }
    });
    page.on("requestfailed", (req) => {
      if (req.url().startsWith(server.url)) failed.push(req.url());
    });
    page.on("console", (m) => {
      if (/validation error/i.test(m.text())) warnings.push(m.text());
    });
    const r = await page.goto(`${server.url}/swagger`, { waitUntil: "networkidle0", timeout: 30_000 });
    expect(r?.status()).toBe(200);
    // The sidebar lists every tag; opening each group lists its operations by summary.
    await page.waitForFunction(() => document.body.innerText.includes("Open Group - search"), {
      timeout: 30_000,
    });
    await page.evaluate(() => {
      for (const b of Array.from(document.querySelectorAll("button")))
        if (b.innerText.includes("Open Group") || b.getAttribute("aria-label")?.includes("Open Group"))
          b.click();
    });
    await page.waitForFunction(
      (wanted: string[]) => wanted.every((w) => document.body.innerText.includes(w)),
      { timeout: 30_000 },
      summaries,
    );
    const text = await page.evaluate(() => document.body.innerText);
    expect(summaries.filter((w) => !text.includes(w))).toEqual([]);
    expect(warnings).toEqual([]);
    expect(failed).toEqual([]);
    expect(outside).toEqual([]);
  }, 90_000);
});
