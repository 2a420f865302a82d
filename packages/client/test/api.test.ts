/** The typed API client against a fake service: wire shapes of requests, envelopes and errors. */
import { afterAll, describe, expect, test } from "bun:test";
import {
  ApiError,
  blake3Hex,
  buildManifest,
  EsyncApi,
  encryptBytes,
  identityFromMnemonic,
  readAll,
  saltedHash,
  toHex,
  utf8,
  WalletTokenSource,
} from "../src/index.ts";
import { FakeServer, parseMultipart } from "./fake-server.ts";

const server = new FakeServer().start();
afterAll(() => server.stop());
const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("alpha");
const api = new EsyncApi({
  baseUrl: `${server.url}/`,
  token: new WalletTokenSource(identity),
  billingBypass: "bb",
});

function manifestFor(blob: Uint8Array, plain: Uint8Array, relativePath: string) {
  return buildManifest(
    {
      ss58Address: identity.address,
      folderHash: folder.folderHash,
      ciphertextHash: blake3Hex(blob),
      sizeBytes: plain.byteLength,
      saltedHash: saltedHash(identity.address, plain),
      relativePath,
    },
    folder,
  );
}

describe("requests", () => {
  test("health needs no token and returns the body as is", async () => {
    const h = await new EsyncApi({ baseUrl: server.url }).health();
    expect(h.status).toBe("healthy");
    expect(server.seen.at(-1)?.headers.authorization).toBeUndefined();
  });

  test("authenticated calls send a sig1 bearer token", async () => {
    await api.listFolders(identity.address);
    expect(server.seen.at(-1)?.headers.authorization).toMatch(
      new RegExp(`^Bearer sig1\\.${identity.address}\\.\\d+\\.[0-9a-f]{128}$`),
    );
  });

  test("/upload is multipart: manifest (JSON) first, then ciphertext bytes with no filename", async () => {
    const plain = utf8("hello multipart");
    const blob = encryptBytes(folder.key, plain);
    const m = manifestFor(blob, plain, "a/hello.txt");
    const result = await api.upload(m, blob);
    expect(result.revision_id).toHaveLength(32);
    const req = server.requests(/^POST \/upload$/).at(-1);
    if (!req) throw new Error("no upload seen");
    const boundary = /boundary=(.+)$/.exec(req.headers["content-type"] ?? "")?.[1] ?? "";
    expect(req.headers["content-length"]).toBe(String(req.body.byteLength));
    const parts = parseMultipart(req.body, boundary);
    expect(parts).toHaveLength(2);
    expect(parts[0]?.headers).toContain('name="manifest"');
    expect(parts[0]?.headers).toContain("application/json");
    expect(JSON.parse(new TextDecoder().decode(parts[0]?.data))).toEqual(JSON.parse(JSON.stringify(m)));
    expect(parts[1]?.headers).toContain('name="ciphertext"');
    expect(parts[1]?.headers).not.toContain("filename");
    expect(toHex(parts[1]?.data ?? new Uint8Array())).toBe(toHex(blob));
  });

  test("finalize is a POST with an empty body and Content-Length: 0", async () => {
    const plain = utf8("x");
    const blob = encryptBytes(folder.key, plain);
    const s = await api.createSession({
      manifest: manifestFor(blob, plain, "f.txt"),
      chunkCount: 1,
      chunkSize: blob.byteLength,
      ciphertextSize: blob.byteLength,
    });
    await api.putChunk(s.session_id, 0, blob);
    const status = await api.sessionStatus(s.session_id);
    expect(status).toMatchObject({
      session_id: s.session_id,
      state: "receiving",
      total_chunks: 1,
      chunks_received: [0],
    });
    await api.finalizeSession(s.session_id);
    const req = server.requests(/finalize$/).at(-1);
    expect(req?.headers["content-length"]).toBe("0");
    expect(req?.body.byteLength).toBe(0);
  });

  test("search sends every filter under its wire name, file types comma-separated, and the billing header", async () => {
    await api.searchFiles(identity.address, {
      q: "report 50%",
      fileType: ["image", ".pdf"],
      sizeMin: 1,
      sizeMax: 2,
      dateFrom: 3,
      dateTo: 4,
      offset: 5,
      limit: 6,
      sortBy: "size_bytes",
      sortOrder: "asc",
    });
    const req = server.requests(/^GET \/search_files/).at(-1);
    const q = new URL(`http://x${req?.path}`).searchParams;
    expect(Object.fromEntries(q)).toEqual({
      q: "report 50%",
      file_type: "image,.pdf",
      size_min: "1",
      size_max: "2",
      date_from: "3",
      date_to: "4",
      offset: "5",
      limit: "6",
      sort_by: "size_bytes",
      sort_order: "asc",
    });
    expect(req?.headers["x-billing-bypass"]).toBe("bb");
    expect(() => api.searchFiles(identity.address, { sizeMin: -1 })).toThrow(RangeError);
  });

  test("browse sends path and paging", async () => {
    await api.browse(identity.address, folder.folderHash, { path: "Documents/2026", offset: 0, limit: 100 });
    const req = server.requests(/^GET \/browse/).at(-1);
    expect(req?.path).toBe(
      `/browse/${identity.address}/${folder.folderHash}?path=Documents%2F2026&offset=0&limit=100`,
    );
  });

  test("download sends Range forms and reports 206, Content-Range and the service headers", async () => {
    const plain = utf8("0123456789".repeat(10));
    const blob = encryptBytes(folder.key, plain);
    const m = manifestFor(blob, plain, "range.txt");
    await api.upload(m, blob);
    const id = toHex(m.path_hash);
    const whole = await api.download(identity.address, folder.folderHash, id);
    expect(whole.status).toBe(200);
    expect(whole.sizeBytes).toBe(100);
    expect(whole.revisionSeq).toBe(1);
    expect(whole.revisionIdHex).toMatch(/^[0-9a-f]{64}$/);
    expect(toHex(await readAll(whole.body))).toBe(toHex(blob));
    const part = await api.download(identity.address, folder.folderHash, id, {
      range: { start: 10, end: 19 },
    });
    expect(part.status).toBe(206);
    expect(part.contentRange).toEqual({ start: 10, end: 19, total: blob.byteLength });
    expect(toHex(await readAll(part.body))).toBe(toHex(blob.subarray(10, 20)));
    expect(server.seen.at(-1)?.headers.range).toBe("bytes=10-19");
    const tail = await api.download(identity.address, folder.folderHash, id, { range: { suffix: 5 } });
    expect(toHex(await readAll(tail.body))).toBe(toHex(blob.subarray(blob.byteLength - 5)));
  });

  test("iterateState pages through a folder", async () => {
    const all = [];
    for await (const f of api.iterateState(identity.address, folder.folderHash, 1)) all.push(f);
    const page = await api.getState(identity.address, folder.folderHash);
    expect(all.length).toBe(page.total_count);
    expect(all.length).toBeGreaterThanOrEqual(3);
  });
});

describe("errors", () => {
  test("an Error envelope becomes ApiError with status, code and message", async () => {
    const e = await api
      .registerFolder({ ss58Address: identity.address, folderHash: "0000000000000000", label: "x" })
      .catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(409);
    expect(e.code).toBe("conflict");
    expect(e.message).toBe("exists");
    expect(e.conflict).toBeUndefined();
    expect(e.retryable).toBe(false);
  });

  test("a 409 Conflict envelope carries current_revision_id and current_revision_seq", async () => {
    const plain = utf8("again");
    const blob = encryptBytes(folder.key, plain);
    await api.upload(manifestFor(blob, plain, "twice.txt"), blob);
    const e = await api.upload(manifestFor(blob, plain, "twice.txt"), blob).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(409);
    expect(e.code).toBe("conflict");
    expect(e.conflict.currentRevisionSeq).toBe(1);
    expect(e.conflict.currentRevisionId).toHaveLength(32);
  });

  test("a 404 with a non-JSON body becomes http_404", async () => {
    const e = await new EsyncApi({ baseUrl: `${server.url}/nowhere`, token: "t" })
      .listFolders("x")
      .catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe("http_404");
  });

  test("a refused connection is status 0 network_error, retryable", async () => {
    const e = await new EsyncApi({ baseUrl: "http://127.0.0.1:1", token: "t" })
      .listFolders("x")
      .catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(0);
    expect(e.code).toBe("network_error");
    expect(e.retryable).toBe(true);
  });

  test("a 401 makes a renewable token source sign a new token and the call is sent once more", async () => {
    let now = 1_900_000_000;
    const tokens = new WalletTokenSource(identity, { clock: () => now });
    const client = new EsyncApi({ baseUrl: server.url, token: tokens });
    const stale = tokens.getToken();
    server.rejectTokens.add(stale);
    now += 1;
    await client.listFolders(identity.address);
    expect(server.seen.at(-1)?.headers.authorization).not.toBe(`Bearer ${stale}`);
  });
});
