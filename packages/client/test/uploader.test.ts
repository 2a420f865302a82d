/** The uploader against a fake service: single-shot vs sessions, parallelism, retries, resume, conflicts, give-up. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { copyFile, mkdtemp, open, readdir, rename, rm, stat, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ApiError,
  ciphertextSizeFor,
  decryptBytes,
  EsyncApi,
  fileId,
  identityFromMnemonic,
  type PendingUpload,
  pathHash,
  readAll,
  toHex,
  type UploadFileOptions,
  type UploadProgress,
  UploadStateFile,
  uploadFile,
  uploadKey,
} from "../src/index.ts";
import { FakeServer } from "./fake-server.ts";

const dir = await mkdtemp(join(tmpdir(), "esync-up-"));
const server = new FakeServer().start();
afterAll(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});
const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("alpha");
const KiB = 1024;
const CHUNK = 256 * KiB; // small chunks keep the tests fast; the layout logic is the same as at 8 MiB
const noSleep = async () => {};

let n = 0;
async function localFile(size: number): Promise<{ path: string; data: Uint8Array; rel: string }> {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(data.subarray(i, Math.min(size, i + 65536)));
  const rel = `dir/file-${++n}.bin`;
  const path = join(dir, `file-${n}.bin`);
  await Bun.write(path, data);
  return { path, data, rel };
}

function options(
  file: { path: string; rel: string },
  extra: Partial<UploadFileOptions> = {},
): UploadFileOptions {
  return {
    api: new EsyncApi({ baseUrl: server.url, token: identity.address }),
    ss58Address: identity.address,
    folder,
    localPath: file.path,
    relativePath: file.rel,
    chunkSize: CHUNK,
    singleShotLimit: CHUNK,
    sleep: noSleep,
    ...extra,
  };
}

async function storedPlaintext(rel: string): Promise<Uint8Array> {
  const api = new EsyncApi({ baseUrl: server.url, token: identity.address });
  const d = await api.download(identity.address, folder.folderHash, fileId(pathHash(rel)));
  return decryptBytes(folder.key, await readAll(d.body), { expectedPlaintextSize: d.sizeBytes ?? undefined });
}

beforeEach(() => {
  server.failNext.clear();
  server.chunkDelayMs = 0;
  server.maxInFlightChunks = 0;
});

describe("single-shot", () => {
  test("a blob at or under the limit goes through /upload and is stored decryptable", async () => {
    const f = await localFile(CHUNK - 100); // ciphertext ≤ CHUNK
    const out = await uploadFile(options(f));
    expect(out.mode).toBe("single");
    expect(out.result?.revision_id).toHaveLength(32);
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
    expect(server.requests(/^PUT /).length).toBe(0);
  });

  test("retries a 500 from /upload, then succeeds", async () => {
    const f = await localFile(1000);
    server.failNext.set("POST upload", [500, 503]);
    const out = await uploadFile(options(f));
    expect(out.result).not.toBeNull();
  });
});

describe("sessions", () => {
  test("a larger blob goes in chunk-size slices, at most `parallelism` at a time, and finalizes", async () => {
    const f = await localFile(10 * CHUNK + 123);
    server.chunkDelayMs = 20;
    const before = server.requests(/^PUT /).length;
    const events: UploadProgress[] = [];
    const out = await uploadFile(options(f, { parallelism: 3, onProgress: (p) => events.push(p) }));
    const chunks = Math.ceil(ciphertextSizeFor(f.data.byteLength) / CHUNK);
    expect(out.mode).toBe("session");
    expect(out.bytesSent).toBe(ciphertextSizeFor(f.data.byteLength));
    expect(server.requests(/^PUT /).length - before).toBe(chunks);
    expect(server.maxInFlightChunks).toBeLessThanOrEqual(3); // each chunk is encrypted just before its PUT
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
    const last = events.at(-1);
    expect(last?.phase).toBe("done");
    expect(last?.chunksDone).toBe(chunks);
    expect(events.some((e) => e.phase === "encrypting")).toBe(true);
    expect(events.some((e) => e.phase === "uploading" && e.rateBytesPerSec > 0)).toBe(true);
  });

  test("retries chunk PUTs that get 500 and a session create that gets 429", async () => {
    const f = await localFile(3 * CHUNK);
    server.failNext.set("PUT chunk", [500, 500, 502]);
    server.failNext.set("POST session", [429]);
    const out = await uploadFile(options(f));
    expect(out.result).not.toBeNull();
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });

  test("keeps the session and state when the retry budget runs out on 500s, and the next run resumes", async () => {
    const f = await localFile(3 * CHUNK);
    const state = new UploadStateFile(join(dir, "giveup.json"));
    server.failNext.set("PUT chunk", Array(50).fill(500));
    const deletes = server.requests(/^DELETE \/upload\/session\//).length;
    const err = await uploadFile(options(f, { stateFile: state, retry: { attempts: 2 } })).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(500);
    expect(err.extra.retriedForMs).toBeGreaterThanOrEqual(0);
    expect(server.requests(/^DELETE \/upload\/session\//).length).toBe(deletes);
    expect(Object.keys(await state.all())).toHaveLength(1);
    server.failNext.clear();
    const out = await uploadFile(options(f, { stateFile: state }));
    expect(out.resumed).toBe(true);
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
    expect(await state.all()).toEqual({});
  });

  test("gives up at once on a 400, deletes the session and forgets it", async () => {
    const f = await localFile(3 * CHUNK);
    const state = new UploadStateFile(join(dir, "giveup400.json"));
    server.failNext.set("PUT chunk", Array(50).fill(400));
    const err = await uploadFile(options(f, { stateFile: state })).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(server.requests(/^DELETE \/upload\/session\//).length).toBeGreaterThan(0);
    expect(await state.all()).toEqual({});
    server.failNext.clear();
  });

  test("a finalize whose answer is lost is settled by status: finalized means done", async () => {
    const f = await localFile(2 * CHUNK);
    let dropped = false;
    const dropFinalizeAnswer: typeof fetch = Object.assign(
      async (input: RequestInfo | URL, init?: RequestInit) => {
        const res = await fetch(input, init);
        if (!dropped && String(input).endsWith("/finalize")) {
          dropped = true;
          throw new TypeError("connection reset");
        }
        return res;
      },
      { preconnect: fetch.preconnect },
    );
    const api = new EsyncApi({ baseUrl: server.url, token: identity.address, fetch: dropFinalizeAnswer });
    const out = await uploadFile(options(f, { api }));
    expect(dropped).toBe(true);
    expect(out.result).toBeNull();
    expect(server.requests(/finalize$/).length).toBeGreaterThan(0);
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });
});

/** Starts an upload of `f` remembered in a fresh state file and aborts it once `afterChunks` chunks are stored. */
async function interruptedUpload(
  f: { path: string; rel: string },
  name: string,
  afterChunks: number,
  parallelism = 1,
): Promise<{ state: UploadStateFile; key: string; pending: PendingUpload }> {
  const state = new UploadStateFile(join(dir, `${name}.json`));
  const ctl = new AbortController();
  const err = await uploadFile(
    options(f, {
      stateFile: state,
      parallelism,
      signal: ctl.signal,
      onProgress: (p) => {
        if (p.chunksDone >= afterChunks) ctl.abort(new Error("interrupted"));
      },
    }),
  ).catch((e) => e);
  expect(err).toBeInstanceOf(Error);
  const key = uploadKey(identity.address, folder.folderHash, fileId(pathHash(f.rel)));
  const pending = await state.get(key);
  if (!pending) throw new Error("the interrupted upload was not remembered");
  return { state, key, pending };
}

describe("resume", () => {
  test("an upload aborted midway resumes from status and sends only the missing chunks", async () => {
    const f = await localFile(12 * CHUNK);
    const { state, key, pending } = await interruptedUpload(f, "resume1", 4, 2);
    expect(server.sessions.get(pending.sessionId)?.chunks.size ?? 0).toBeGreaterThanOrEqual(4);

    const out = await uploadFile(options(f, { stateFile: state }));
    const total = ciphertextSizeFor(f.data.byteLength);
    expect(out.resumed).toBe(true);
    expect(out.sessionId).toBe(pending.sessionId);
    expect(out.bytesSkipped).toBeGreaterThanOrEqual(4 * CHUNK);
    expect(out.bytesSent + out.bytesSkipped).toBe(total);
    expect(out.bytesSent).toBeLessThan(total);
    expect(await state.get(key)).toBeUndefined();
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });

  test("remembers the file's identity and base nonce, not a copy of the blob: no file is written besides the state", async () => {
    const f = await localFile(6 * CHUNK);
    const before = await readdir(dir);
    const { state, pending } = await interruptedUpload(f, "nospill", 2);
    expect(pending.sealed.spillPath).toBeNull();
    const st = await stat(f.path);
    expect(pending.sealed.source).toEqual({ path: f.path, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
    expect(pending.sealed.baseNonceHex).toMatch(/^[0-9a-f]{48}$/);
    expect((await readdir(dir)).sort()).toEqual([...before, "nospill.json"].sort());
    const out = await uploadFile(options(f, { stateFile: state }));
    expect(out.resumed).toBe(true);
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });

  test("resumes a copy of the file (new inode, same bytes, size and mtime): hashed again under the saved nonce, only missing chunks are sent", async () => {
    const f = await localFile(6 * CHUNK);
    await utimes(f.path, 1_700_000_000, 1_700_000_000); // whole seconds: utimes keeps them exactly
    const { state, pending } = await interruptedUpload(f, "resume2", 2);
    const st = await stat(f.path);
    await rename(f.path, `${f.path}.old`);
    await copyFile(`${f.path}.old`, f.path);
    await utimes(f.path, 1_700_000_000, 1_700_000_000);
    expect((await stat(f.path)).ino).not.toBe(st.ino);
    const out = await uploadFile(options(f, { stateFile: state }));
    expect(out.resumed).toBe(true);
    expect(out.sessionId).toBe(pending.sessionId);
    expect(out.bytesSkipped).toBeGreaterThan(0);
    expect(out.bytesSent).toBeLessThan(ciphertextSizeFor(f.data.byteLength));
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });

  test("a file whose bytes change behind the same size, mtime and inode is refused at finalize and the session is dropped", async () => {
    const f = await localFile(6 * CHUNK);
    await utimes(f.path, 1_700_000_000, 1_700_000_000);
    const { state, key, pending } = await interruptedUpload(f, "tampered", 2);
    const fh = await open(f.path, "r+");
    await fh.write(new Uint8Array([(f.data[5 * CHUNK] as number) ^ 1]), 0, 1, 5 * CHUNK);
    await fh.close();
    await utimes(f.path, 1_700_000_000, 1_700_000_000);
    const err = await uploadFile(options(f, { stateFile: state })).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(await state.get(key)).toBeUndefined();
    expect(server.sessions.has(pending.sessionId)).toBe(false);
  });

  test("an expired session (404 on status) is replaced by a new one", async () => {
    const f = await localFile(4 * CHUNK);
    const { state, pending } = await interruptedUpload(f, "resume3", 1);
    server.sessions.delete(pending.sessionId);
    const out = await uploadFile(options(f, { stateFile: state }));
    expect(out.sessionId).not.toBe(pending.sessionId);
    expect(out.bytesSent).toBe(ciphertextSizeFor(f.data.byteLength));
    expect(Buffer.compare(await storedPlaintext(f.rel), f.data)).toBe(0);
  });

  test("a file changed since the interrupted run abandons the old session and starts over", async () => {
    const f = await localFile(4 * CHUNK);
    const { state, pending } = await interruptedUpload(f, "resume4", 1);
    const changed = new Uint8Array(4 * CHUNK + 7).fill(9);
    await Bun.write(f.path, changed);
    await utimes(f.path, new Date(), new Date(Date.now() + 2000));
    const out = await uploadFile(options(f, { stateFile: state }));
    expect(out.resumed).toBe(false);
    expect(server.sessions.has(pending.sessionId)).toBe(false);
    expect(Buffer.compare(await storedPlaintext(f.rel), changed)).toBe(0);
  });
});

describe("conflicts", () => {
  test("a new-file upload over an existing file throws 409 with the current revision", async () => {
    const f = await localFile(500);
    await uploadFile(options(f));
    const e = await uploadFile(options(f)).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(409);
    expect(e.conflict.currentRevisionSeq).toBe(1);
  });

  test("with onConflict rebase, a single-shot upload moves onto the current revision", async () => {
    const f = await localFile(500);
    await uploadFile(options(f));
    const out = await uploadFile(options(f, { onConflict: "rebase" }));
    expect(out.rebases).toBe(1);
    expect(out.manifest.revision_seq).toBe(2);
  });

  test("with onConflict rebase, a session upload is redone on a new session with the rebased manifest", async () => {
    const f = await localFile(3 * CHUNK);
    await uploadFile(options(f));
    const first = [...server.files.values()].find((x) => x.manifest.relative_path === f.rel);
    const out = await uploadFile(options(f, { onConflict: "rebase" }));
    expect(out.rebases).toBe(1);
    expect(out.manifest.revision_seq).toBe(2);
    expect(out.manifest.base_revision_id).toEqual(first?.revisionId ?? []);
    expect(toHex(await storedPlaintext(f.rel))).toBe(toHex(f.data));
  });
});
