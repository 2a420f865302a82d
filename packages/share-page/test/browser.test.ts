// biome-ignore-all lint/performance/useDomNodeTextContent: the test checks the text the page renders, which is innerText
/**
 * The recipient page in a real browser (Debian's Chromium through puppeteer-core), on links made
 * by `esync share` against a real server: a file link, a password link (wrong, then right
 * password), a wrong key, an expired and a revoked link, a folder link with navigation, and a
 * large file (1 GiB unless `ESYNC_TEST_SHARE_BIG_BYTES` says otherwise) downloaded through the
 * service worker while the page's JS heap stays under 200 MiB, and a one-download link used up. Every download is compared byte
 * for byte with the original; every request must stay on the server's origin. Screenshots of
 * each state go to test-output/share-page/.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "@esync/cli/test/helpers.ts";
import { blake3FileHex } from "@esync/client/hash.ts";
import { parseShareLink } from "@esync/client/share-crypto.ts";
import { REPO_ROOT, type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import puppeteer, { type Browser, type CDPSession, type Page } from "puppeteer-core";

setDefaultTimeout(1_200_000);
const CHROMIUM = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"].find((p) => existsSync(p));
if (!CHROMIUM) console.warn("share-page: no Chromium (apt-get install chromium); test skipped");
const BIG = Number(process.env.ESYNC_TEST_SHARE_BIG_BYTES ?? 1024 * 1024 * 1024);
const HEAP_LIMIT = 200 * 1024 * 1024;
const SHOTS = join(REPO_ROOT, "test-output", "share-page");

const work = mkdtempSync(join(tmpdir(), "esync-share-page-"));
const cfg = join(work, "config");
const downloads = join(work, "downloads");
let server: ServerProcess;
let browser: Browser;
let browserCdp: CDPSession;
const outside: string[] = [];

/** A finished browser download: its file on disk and the name the page suggested. */
interface Download {
  path: string;
  name: string;
  state: string;
}
const begun = new Map<string, string>();
const waiters: ((d: Download) => void)[] = [];

beforeAll(async () => {
  if (!CHROMIUM) return;
  mkdirSync(SHOTS, { recursive: true });
  mkdirSync(downloads, { recursive: true });
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  expect((await runCli(cfg, ["init", "--server", server.url, "--json"])).code).toBe(0);
  const tree = join(work, "tree");
  await Bun.write(join(tree, "top.txt"), "top level\n");
  await Bun.write(join(tree, "docs", "guide.md"), "# guide\n");
  await Bun.write(join(tree, "docs", "deep", "notes.bin"), randomBytes(300_000));
  expect((await runCli(cfg, ["push", tree, "--folder", "pagefolder", "--create", "--json"])).code).toBe(0);
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  browserCdp = await browser.target().createCDPSession();
  await browserCdp.send("Browser.setDownloadBehavior", {
    behavior: "allowAndName",
    downloadPath: downloads,
    eventsEnabled: true,
  });
  browserCdp.on("Browser.downloadWillBegin", (e) => begun.set(e.guid, e.suggestedFilename));
  browserCdp.on("Browser.downloadProgress", (e) => {
    if (e.state === "inProgress") return;
    const d = { path: join(downloads, e.guid), name: begun.get(e.guid) ?? "", state: e.state };
    waiters.shift()?.(d);
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}, 60_000);

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65_536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65_536)));
  return out;
}

/** The next download to finish (completed or canceled). */
function nextDownload(): Promise<Download> {
  return new Promise((resolve) => waiters.push(resolve));
}

/** A page that refuses (and records) every request outside the server. */
async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const url = req.url();
    if (url.startsWith(server.url) || url.startsWith("data:") || url.startsWith("blob:")) void req.continue();
    else {
      outside.push(url);
      void req.abort();
    }
  });
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function share(args: string[], input?: string): Promise<string> {
  const r = await runCli(cfg, ["share", ...args, "--json"], input);
  if (r.code !== 0) throw new Error(`esync share failed (${r.code}): ${r.stderr}`);
  return r.json<{ link: string }>().link;
}

async function settled(page: Page): Promise<{ state: string; error: string | undefined; text: string }> {
  await page.waitForSelector("main[data-state=ready], main[data-state=error], main[data-state=password]", {
    timeout: 60_000,
  });
  return page.evaluate(() => {
    const m = document.querySelector("main") as HTMLElement;
    return { state: m.dataset.state ?? "", error: m.dataset.error, text: m.innerText };
  });
}

/** Clicks a download button, waits for the browser's download and the page's "done". */
async function clickDownload(page: Page, selector: string): Promise<Download> {
  const done = nextDownload();
  await page.click(selector);
  const d = await done;
  await page.waitForSelector("[data-download=done], [data-download=failed]", { timeout: 60_000 });
  return d;
}

/**
 * Moves a file share's expiry into the past in the server's SQLite database (the shortest
 * lifetime a client may ask for is 24 hours).
 */
async function expireShare(link: string): Promise<void> {
  const token = parseShareLink(link).token;
  const db = new Database(join(server.dataDir, "esync.sqlite"));
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const row = db.query("SELECT expires_at FROM shares WHERE token = ?").get(token) as {
      expires_at: unknown;
    } | null;
    if (!row) throw new Error("share row not found");
    const past = typeof row.expires_at === "string" ? "2000-01-01T00:00:00.000Z" : 946_684_800;
    db.query("UPDATE shares SET expires_at = ? WHERE token = ?").run(past, token);
  } finally {
    db.close();
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  return (await blake3FileHex(a)) === (await blake3FileHex(b));
}

describe.skipIf(!CHROMIUM)("the share page in Chromium", () => {
  test("a file link shows name, size and expiry and downloads the identical file", async () => {
    const file = join(work, "Quarterly report ü.bin");
    await Bun.write(file, randomBytes(3_000_001));
    const link = await share([file, "--ttl", "7d"]);
    const page = await newPage();
    const res = await page.goto(link);
    expect(res?.headers()["content-security-policy"]).toContain("default-src 'none'");
    expect(res?.headers()["referrer-policy"]).toBe("no-referrer");
    const s = await settled(page);
    expect(s.state).toBe("ready");
    expect(s.text).toContain("Quarterly report ü.bin");
    expect(s.text).toContain("2.9 MiB");
    expect(await page.$eval("#expires", (e) => (e as HTMLElement).innerText)).not.toBe("never");
    await shot(page, "file-ready");
    const d = await clickDownload(page, "button.download");
    expect(d).toMatchObject({ state: "completed", name: "Quarterly report ü.bin" });
    expect(await sameFile(d.path, file)).toBe(true);
    await shot(page, "file-downloaded");
    await page.close();
  });

  test("a password link asks for the password, says so for a wrong one and opens with the right one", async () => {
    const file = join(work, "secret.txt");
    await Bun.write(file, "only with the password\n");
    const link = await share([file, "--password"], "open sesame 42\n");
    expect(link).toContain("#p=");
    const page = await newPage();
    await page.goto(link);
    expect((await settled(page)).state).toBe("password");
    await shot(page, "password-prompt");
    await page.type("#password", "not the password");
    await page.click("#unlock");
    await page.waitForSelector("main[data-error=wrong_password]", { timeout: 60_000 });
    expect(await page.$eval("#password-note", (e) => (e as HTMLElement).innerText)).toContain(
      "Wrong password",
    );
    await shot(page, "password-wrong");
    await page.$eval("#password", (e) => {
      (e as HTMLInputElement).value = "";
    });
    await page.type("#password", "open sesame 42");
    await page.click("#unlock");
    await page.waitForSelector("main[data-state=ready]", { timeout: 60_000 });
    await shot(page, "password-opened");
    const d = await clickDownload(page, "button.download");
    expect(d.state).toBe("completed");
    expect(await sameFile(d.path, file)).toBe(true);
    await page.close();
  });

  test("a link with another key says the key does not fit", async () => {
    const file = join(work, "wrongkey.txt");
    await Bun.write(file, "x");
    const link = await share([file]);
    const forged = `${link.split("#k=")[0]}#k=${"A".repeat(43)}`;
    const page = await newPage();
    await page.goto(forged);
    const s = await settled(page);
    expect(s).toMatchObject({ state: "error", error: "wrong_key" });
    expect(s.text).toContain("key does not fit");
    await shot(page, "wrong-key");
    await page.goto(link.split("#")[0] as string);
    expect(await settled(page)).toMatchObject({ state: "error", error: "bad_link" });
    await shot(page, "incomplete-link");
    await page.close();
  });

  test("a revoked link says it no longer works", async () => {
    const file = join(work, "revoked.txt");
    await Bun.write(file, "soon gone");
    const link = await share([file]);
    expect((await runCli(cfg, ["unshare", link])).code).toBe(0);
    const page = await newPage();
    await page.goto(link);
    const s = await settled(page);
    expect(s).toMatchObject({ state: "error", error: "revoked" });
    expect(s.text).toContain("no longer works");
    await shot(page, "revoked");
    await page.close();
  });

  test("an expired link says it has expired", async () => {
    const file = join(work, "expired.txt");
    await Bun.write(file, "too late");
    const link = await share([file]);
    await expireShare(link);
    const page = await newPage();
    await page.goto(link);
    const s = await settled(page);
    expect(s).toMatchObject({ state: "error", error: "expired" });
    expect(s.text).toContain("expired");
    await shot(page, "expired");
    await page.close();
  });

  test("a one-download link downloads once; the next download through the service worker says the link is used up, not expired", async () => {
    const file = join(work, "once.bin");
    await Bun.write(file, randomBytes(100_000));
    const link = await share([file, "--max-downloads", "1"]);
    const page = await newPage();
    await page.goto(link);
    expect((await settled(page)).state).toBe("ready");
    const first = await clickDownload(page, "button.download");
    expect(first.state).toBe("completed");
    expect(await sameFile(first.path, file)).toBe(true);
    await page.click("button.download");
    await page.waitForSelector(".download-box[data-download=failed]", { timeout: 60_000 });
    const box = await page.$eval(".download-box", (e) => ({
      error: (e as HTMLElement).dataset.error,
      text: (e as HTMLElement).innerText,
    }));
    expect(box.error).toBe("used_up");
    expect(box.text).not.toContain("expired");
    await shot(page, "file-used-up");
    await page.close();
  });

  test("a folder link browses directories and downloads a file from a subdirectory", async () => {
    const link = await share(["--folder", "pagefolder", "docs"]);
    expect(link).toContain("/share/folder/");
    const page = await newPage();
    await page.goto(link);
    const s = await settled(page);
    expect(s.state).toBe("ready");
    await page.waitForSelector("#listing ul.files");
    expect(
      await page.$$eval("#listing [data-file]", (els) => els.map((e) => e.getAttribute("data-file"))),
    ).toEqual(["guide.md"]);
    expect(s.text).not.toContain("top.txt");
    await shot(page, "folder-root");
    await page.click('button.dir[data-path="deep"]');
    await page.waitForSelector('main[data-path="deep"] [data-file="deep/notes.bin"]');
    await shot(page, "folder-subdirectory");
    const d = await clickDownload(page, '[data-file="deep/notes.bin"] button.download');
    expect(d).toMatchObject({ state: "completed", name: "notes.bin" });
    expect(await sameFile(d.path, join(work, "tree", "docs", "deep", "notes.bin"))).toBe(true);
    await shot(page, "folder-downloaded");
    await page.click('button.crumb[data-path=""]');
    await page.waitForSelector('main[data-path=""] [data-file="guide.md"]');
    await page.close();
  });

  test(`a ${BIG}-byte file downloads through the service worker with the page's JS heap under 200 MiB`, async () => {
    const file = join(work, "big.bin");
    const fh = await open(file, "w");
    for (let at = 0; at < BIG; at += 8 * 1024 * 1024)
      await fh.write(randomBytes(Math.min(8 * 1024 * 1024, BIG - at)));
    await fh.close();
    const t0 = performance.now();
    const link = await share([file]);
    const shared = performance.now();
    const page = await newPage();
    await page.goto(link);
    expect((await settled(page)).state).toBe("ready");
    const cdp = await page.createCDPSession();
    // The service worker, which does the decryption, is sampled and bounded too.
    const worker = await browser.waitForTarget((t) => t.type() === "service_worker", { timeout: 30_000 });
    const workerCdp = await worker.createCDPSession();
    let peak = 0;
    let workerPeak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [{ usedSize }, w] = await Promise.all([
          cdp.send("Runtime.getHeapUsage"),
          workerCdp.send("Runtime.getHeapUsage").catch(() => ({ usedSize: 0 })),
        ]);
        peak = Math.max(peak, usedSize);
        workerPeak = Math.max(workerPeak, w.usedSize);
        await Bun.sleep(100);
      }
    })();
    const d = await clickDownload(page, "button.download");
    const downloaded = performance.now();
    sampling = false;
    await sampler;
    await shot(page, "big-downloaded");
    expect(d.state).toBe("completed");
    expect(await sameFile(d.path, file)).toBe(true);
    console.log(
      `share-page: ${BIG} bytes; esync share ${((shared - t0) / 1000).toFixed(1)} s, browser download ${((downloaded - shared) / 1000).toFixed(1)} s, page JS heap peak ${(peak / 1024 / 1024).toFixed(1)} MiB, service worker JS heap peak ${(workerPeak / 1024 / 1024).toFixed(1)} MiB`,
    );
    expect(peak).toBeLessThan(HEAP_LIMIT);
    expect(workerPeak).toBeLessThan(HEAP_LIMIT);
    await page.close();
  });

  test("no page made a request outside the server", () => {
    expect(outside).toEqual([]);
  });
});
