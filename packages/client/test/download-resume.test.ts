/**
 * The client library resumes a broken download with Range + If-Range against the real app
 * (issue 10 defect 6): the resumed bytes come from the same revision and the file verifies; when
 * the file was replaced meanwhile, the server's 200 makes the download fail with
 * RevisionChangedError, leaving nothing at the destination, instead of splicing two revisions.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTestApp, type TestApp } from "@esync/server/test/support/app.ts";
import {
  downloadFile,
  EsyncApi,
  identityFromMnemonic,
  type RemoteFileEntry,
  RevisionChangedError,
  uploadFile,
} from "../src/index.ts";

const dir = await mkdtemp(join(tmpdir(), "esync-resume-"));
afterAll(() => rm(dir, { recursive: true, force: true }));
const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("resume");

let t: TestApp;
/** Download requests seen: their Range and If-Range headers. */
let seen: { range: string | null; ifRange: string | null; status: number }[];
/** When set, the next download's body breaks after this many bytes. */
let cutAfter: number | null;
/** Runs when a body breaks (e.g. to replace the file before the resume). */
let onCut: (() => Promise<void>) | null;

/** A body that yields `limit` bytes of `body`, then errors like a reset connection. */
function breaking(body: ReadableStream<Uint8Array>, limit: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (sent >= limit) {
        await reader.cancel();
        await onCut?.();
        c.error(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }));
        return;
      }
      const r = await reader.read();
      if (r.done) return c.close();
      const piece = r.value.subarray(0, limit - sent);
      sent += piece.byteLength;
      c.enqueue(piece);
    },
  });
}

const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(String(input));
  const res = await t.fetch(url.pathname + url.search, init);
  if (!url.pathname.startsWith("/download/")) return res;
  const h = new Headers(init?.headers);
  seen.push({ range: h.get("range"), ifRange: h.get("if-range"), status: res.status });
  if (cutAfter === null || !res.body) return res;
  const limit = cutAfter;
  cutAfter = null;
  return new Response(breaking(res.body, limit), { status: res.status, headers: res.headers });
}) as typeof fetch;

let api: EsyncApi;
beforeEach(() => {
  t = makeTestApp({ ESYNC_INSECURE_SS58_TOKENS: "1" });
  api = new EsyncApi({ baseUrl: "http://esync.test", token: identity.address, fetch: fetchFn });
  seen = [];
  cutAfter = null;
  onCut = null;
});
afterEach(() => t.close());

async function upload(name: string, data: Uint8Array, replaces?: RemoteFileEntry): Promise<RemoteFileEntry> {
  const path = join(dir, `src-${name}-${data.byteLength}`);
  await Bun.write(path, data);
  await uploadFile({
    api,
    ss58Address: identity.address,
    folder,
    localPath: path,
    relativePath: name,
    revision: replaces
      ? { revisionSeq: replaces.revision_seq + 1, baseRevisionId: replaces.revision_id }
      : undefined,
  });
  const page = await api.getState(identity.address, folder.folderHash);
  const entry = page.files.find((f) => f.relative_path === name);
  if (!entry) throw new Error("not listed");
  return entry;
}

describe("downloadFile resume", () => {
  test("a connection broken mid-body resumes with Range bytes=N- and If-Range, and the file verifies", async () => {
    const data = crypto.getRandomValues(new Uint8Array(700_000));
    const entry = await upload("r.bin", data);
    cutAfter = 300_001;
    const dest = join(dir, "out/r.bin");
    const out = await downloadFile({ api, ss58Address: identity.address, folder, entry, destPath: dest });
    expect(out.resumes).toBe(1);
    expect(Buffer.compare(await Bun.file(dest).bytes(), data)).toBe(0);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual({
      range: "bytes=300001-",
      ifRange: expect.stringMatching(/^"[0-9a-f]{64}"$/),
      status: 206,
    });
  });

  test("a file replaced before the resume fails with RevisionChangedError and leaves nothing behind", async () => {
    const data = crypto.getRandomValues(new Uint8Array(700_000));
    const entry = await upload("s.bin", data);
    onCut = async () => {
      onCut = null;
      await upload("s.bin", crypto.getRandomValues(new Uint8Array(650_000)), entry);
    };
    cutAfter = 200_000;
    const dest = join(dir, "out2/s.bin");
    const e = await downloadFile({ api, ss58Address: identity.address, folder, entry, destPath: dest }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(RevisionChangedError);
    expect(seen.at(-1)?.status).toBe(200);
    expect(await readdir(join(dir, "out2"))).toEqual([]);
  });

  test("a file replaced after it was listed fails with RevisionChangedError before any byte is decrypted", async () => {
    const listed = await upload("l.bin", crypto.getRandomValues(new Uint8Array(3000)));
    await upload("l.bin", crypto.getRandomValues(new Uint8Array(2000)), listed);
    const e = await downloadFile({
      api,
      ss58Address: identity.address,
      folder,
      entry: listed,
      destPath: join(dir, "out4/l.bin"),
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(RevisionChangedError);
    expect(String(e)).toContain(`revision ${listed.revision_seq}, now ${listed.revision_seq + 1}`);
    expect(await readdir(dir)).not.toContain("out4");
  });

  test("maxResumes 0 turns resuming off: the broken connection's error propagates", async () => {
    const entry = await upload("u.bin", crypto.getRandomValues(new Uint8Array(400_000)));
    cutAfter = 1000;
    const e = await downloadFile({
      api,
      ss58Address: identity.address,
      folder,
      entry,
      destPath: join(dir, "out3/u.bin"),
      maxResumes: 0,
    }).catch((x: unknown) => x);
    expect(String(e)).toContain("socket hang up");
    expect(seen).toHaveLength(1);
  });
});
