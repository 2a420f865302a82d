/**
 * Fuzz: proves that fast-check generated requests against every endpoint (paths, query strings,
 * headers, `Range`, JSON, multipart and raw bodies, with the owner's, another user's, expired,
 * garbage or no credentials), and raw request heads over a socket (request lines, header
 * names and values, short `Host` headers), never get a 5xx nor crash the server, and that a
 * request that must not change anything (a read, or any refused request) leaves the stored
 * state exactly as it was: a snapshot of the owner's folders, every folder's files and the open
 * session's chunks is compared after each such case.
 *
 * `CHAOS_FUZZ_RUNS` (default 2000) sets the cases of the HTTP property (the raw one runs half as
 * many), `CHAOS_SEED` replays a run.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import fc from "fast-check";
import { makeManifest, newUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { ChaosClient, chaosSeed, fileIdOfPath, type Json, Rng, reportFigure } from "./support.ts";

const RUNS = Number(process.env.CHAOS_FUZZ_RUNS ?? 2000);
const FOLDER = "37a8eec1ce19687d";
const FOLDER_B = "0123456789abcdef";

let server: ServerProcess;
const owner = newUser();
const other = newUser();
let c: ChaosClient;
let sid = "";
let fileId = "";
let cases = 0;
let serverErrors: string[] = [];

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
  c = new ChaosClient(server.url, owner);
  const rng = new Rng(3);
  const reg = await c.json("POST", "/register_folder", {
    ss58_address: owner.address,
    folder_hash: FOLDER,
    label: "fuzz",
    device_name: "fuzzer",
  });
  expect(reg.status).toBe(200);
  await c.uploadSingle({ folder: FOLDER, path: "docs/a.txt", ciphertext: rng.bytes(5000) });
  const ct = rng.bytes(300_000);
  const s = await c.openSession({ folder: FOLDER_B, path: "photos/b.jpg", ciphertext: ct }, 65536);
  await c.putChunks(s, ct, 65536, [0, 1, 2, 3, 4], 2);
  await c.finalize(s);
  fileId = fileIdOfPath("docs/a.txt");
  // An open session with one chunk received: its chunks are part of the snapshot.
  const open = rng.bytes(200_000);
  sid = await c.openSession({ folder: FOLDER, path: "docs/open.bin", ciphertext: open }, 65536);
  expect((await c.putChunk(sid, open, 65536, 1)).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** The owner's stored state, as the API shows it (no field that reads themselves refresh). */
async function snapshot(): Promise<string> {
  const folders = await c.json("GET", `/list_folders/${owner.address}`);
  const state: Json[] = [folders.status, folders.body];
  for (const f of [FOLDER, FOLDER_B]) {
    const files = await c.listFolder(f);
    state.push(files);
  }
  const st = await c.json("GET", `/upload/session/${sid}/status`);
  state.push(
    st.status,
    st.status === 200 ? [st.body.Success.state, st.body.Success.chunks_received] : st.body,
  );
  return JSON.stringify(state);
}

/** Printable ASCII only (what a header value can carry through `fetch`). */
const headerSafe = (s: string) => s.replace(/[^\x20-\x7e]/g, "x");

const segment = fc.oneof(
  fc.constantFrom(
    owner.address,
    other.address,
    FOLDER,
    FOLDER_B,
    "",
    "..",
    "%2e%2e",
    "%00",
    "%ff%fe",
    "a".repeat(600),
    "0".repeat(64),
    "ffffffffffffffff",
    "-1",
    "1e309",
    "😀",
    "café",
  ),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.nat().map(String),
);
const auth = fc.constantFrom<() => string | null>(
  () => owner.auth,
  () => other.auth,
  () => null,
  () => "Bearer garbage",
  () => `Bearer ${owner.token(Math.floor(Date.now() / 1000) - 7200, 60)}`,
  () => `Bearer ${owner.address}`,
  () => "Basic Zm9vOmJhcg==",
  () => `Bearer ${owner.token().replace(/\.(\d+)\./, ".0$1.")}`,
);
const queryValue = fc.oneof(
  fc.constantFrom(
    "0",
    "-1",
    "1e3",
    "99999999999999999999",
    "",
    "abc",
    "name",
    "desc",
    "image,.png",
    "a".repeat(300),
  ),
  fc.string({ maxLength: 20 }),
);
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        "offset",
        "limit",
        "q",
        "path",
        "sort_by",
        "sort_order",
        "file_type",
        "size_min",
        "size_max",
        "date_from",
        "date_to",
        "x",
      ),
      queryValue,
    ),
    { maxLength: 4 },
  )
  .map((kv) => (kv.length ? `?${kv.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&")}` : ""));
/** A valid session-create body with one field replaced by a generated value, or removed. */
const mutatedManifestBody = fc
  .tuple(
    fc.constantFrom(
      "ss58_address",
      "folder_hash",
      "ciphertext_hash",
      "size_bytes",
      "signature",
      "signing_key",
      "path_hash",
      "revision_seq",
      "base_revision_id",
      "relative_path",
      "file_name",
      "chunk_count",
      "chunk_size",
      "ciphertext_size",
    ),
    fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  )
  .map(([field, value]) => {
    const ct = new Uint8Array(1000);
    const manifest: Record<string, unknown> = makeManifest({
      owner: owner.address,
      ciphertext: ct,
      path: "z/z.bin",
    });
    const body: Record<string, unknown> = {
      manifest,
      chunk_count: 1,
      chunk_size: 1000,
      ciphertext_size: 1000,
    };
    const target = field in manifest ? manifest : body;
    if (value === undefined) delete target[field];
    else target[field] = value;
    return body;
  });
const body = fc.oneof(
  fc.constant({ kind: "none" as const }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => ({ kind: "json" as const, text: JSON.stringify(v) ?? "null" })),
  mutatedManifestBody.map((v) => ({ kind: "json" as const, text: JSON.stringify(v) })),
  fc.uint8Array({ maxLength: 3000 }).map((b) => ({ kind: "raw" as const, bytes: b })),
  fc
    .array(
      fc.tuple(
        fc.constantFrom("manifest", "ciphertext", "x", ""),
        fc.oneof(
          fc.uint8Array({ maxLength: 2000 }),
          mutatedManifestBody.map((m) => new TextEncoder().encode(JSON.stringify(m.manifest))),
        ),
      ),
      { maxLength: 3 },
    )
    .map((parts) => ({ kind: "multipart" as const, parts })),
);
const range = fc.option(
  fc.oneof(
    fc.tuple(fc.nat(400_000), fc.nat(400_000)).map(([a, b]) => `bytes=${a}-${b}`),
    fc.nat(400_000).map((a) => `bytes=${a}-`),
    fc.nat(400_000).map((a) => `bytes=-${a}`),
    fc.constantFrom("bytes=0-0,5-9", "bytes=", "bytes=-", "items=0-1", "bytes=99999999999999999999-"),
    fc.string({ maxLength: 30 }),
  ),
  { nil: undefined },
);
/** Endpoint path templates; `S` is a generated segment. */
const endpoint = fc.oneof(
  fc.constant(() => ["/health"]),
  fc.constant(() => ["/register_folder"]),
  fc.constant(() => ["/unregister_folder"]),
  fc.constant(() => ["/upload/session"]),
  fc.constant(() => ["/upload"]),
  fc.tuple(segment).map(([a]) => () => [`/list_folders/${a}`]),
  fc.tuple(fc.oneof(fc.constant(""), segment), segment).map(([s, i]) => () => [
    `/upload/session/${s || sid}/chunk/${i}`,
  ]),
  fc.tuple(fc.oneof(fc.constant(""), segment)).map(([s]) => () => [`/upload/session/${s || sid}/status`]),
  fc.tuple(fc.oneof(fc.constant(""), segment)).map(([s]) => () => [`/upload/session/${s || sid}/finalize`]),
  fc.tuple(fc.oneof(fc.constant(""), segment)).map(([s]) => () => [`/upload/session/${s || sid}`]),
  fc.tuple(segment, segment).map(([a, f]) => () => [`/get_state/${a}/${f}`]),
  fc.tuple(segment, segment, fc.oneof(fc.constant(""), segment)).map(([a, f, i]) => () => [
    `/delete/${a}/${f}/${i || fileId}`,
  ]),
  fc
    .tuple(
      fc.constantFrom(owner.address, other.address),
      fc.constantFrom(FOLDER, FOLDER_B),
      fc.oneof(fc.constant(""), segment),
    )
    .map(([a, f, i]) => () => [`/download/${a}/${f}/${i || fileId}`]),
  fc.tuple(segment, segment).map(([a, f]) => () => [`/download/${a}/${f}/${fileId}`]),
  fc.tuple(segment).map(([a]) => () => [`/search_files/${a}`]),
  fc.tuple(segment, segment).map(([a, f]) => () => [`/browse/${a}/${f}`]),
  fc.tuple(segment, segment).map(([a, b]) => () => [`/${a}/${b}`]),
);
const method = fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD");

test(`${RUNS} generated HTTP requests on every endpoint: no 5xx, no crash, refused requests and reads change nothing`, async () => {
  const seed = chaosSeed();
  console.log(`chaos: fuzz seed ${seed} (CHAOS_SEED=${seed} to replay)`);
  let baseline = await snapshot();
  const changedBy: string[] = [];
  serverErrors = [];
  await fc.assert(
    fc.asyncProperty(
      endpoint,
      method,
      query,
      auth,
      body,
      range,
      fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
      async (ep, m, q, authOf, b, rangeValue, contentType) => {
        cases++;
        const path = `${ep()[0]}${q}`;
        const headers: Record<string, string> = {};
        const a = authOf();
        if (a) headers.authorization = a;
        if (rangeValue !== undefined) headers.range = headerSafe(rangeValue);
        let payload: BodyInit | undefined;
        if (m !== "GET" && m !== "HEAD") {
          if (b.kind === "json") {
            payload = b.text;
            headers["content-type"] = "application/json";
          } else if (b.kind === "raw") {
            payload = b.bytes as Uint8Array<ArrayBuffer>;
            headers["content-type"] = "application/octet-stream";
          } else if (b.kind === "multipart") {
            const form = new FormData();
            for (const [name, data] of b.parts)
              form.append(name, new Blob([data as Uint8Array<ArrayBuffer>]));
            payload = form;
          }
        }
        if (contentType !== undefined && payload !== undefined && !(payload instanceof FormData))
          headers["content-type"] = headerSafe(contentType);
        const r = await fetch(`${server.url}${path}`, {
          method: m,
          headers,
          body: payload,
          signal: AbortSignal.timeout(30_000),
        });
        await r.arrayBuffer();
        if (r.status >= 500) serverErrors.push(`${m} ${path} -> ${r.status}`);
        expect(r.status).toBeLessThan(500);
        const now = await snapshot();
        if (m === "GET" || m === "HEAD" || m === "OPTIONS" || r.status >= 300) {
          if (now !== baseline) changedBy.push(`${m} ${path} (${r.status})`);
          expect(now).toBe(baseline);
        }
        baseline = now;
      },
    ),
    { numRuns: RUNS, seed, endOnFailure: true },
  );
  reportFigure("fuzz_seed", seed);
  if (changedBy.length) console.log(`chaos: fuzz requests that changed state: ${changedBy.join("; ")}`);
  expect(serverErrors).toEqual([]);
}, 300_000);

/** Sends `head` (and `body`) on a raw socket; resolves with the status of the answer, or 0 for none within 1 s. */
function rawRequest(port: number, head: string, body: Uint8Array): Promise<number> {
  return new Promise((resolve) => {
    let got = "";
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve(status);
    };
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(head);
      if (body.length) s.write(body);
    });
    const timer = setTimeout(() => finish(0), 1000);
    s.on("data", (d) => {
      got += d.toString("latin1");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(got);
      if (m) finish(Number(m[1]));
      else if (got.length > 12) finish(-1);
    });
    s.on("error", () => finish(0));
    s.on("close", () => finish(0));
  });
}

test(`${Math.ceil(RUNS / 2)} generated raw request heads (request lines, headers, short Host): no 5xx, no crash, refused requests change nothing`, async () => {
  const seed = chaosSeed();
  console.log(`chaos: fuzz-raw seed ${seed}`);
  let baseline = await snapshot();
  const rawErrors: string[] = [];
  const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/);
  const value = fc.oneof(
    fc.string({ maxLength: 60 }).map(headerSafe),
    fc.constantFrom("", " ", "\t", "a\u0080b"),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(method, token, fc.constantFrom("get", "CONNECT", "TRACE", "")),
      endpoint,
      query,
      fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 x", ""),
      fc.constantFrom("127.0.0.1", "api", "a.b", "x:1", "", "[::1]", "h".repeat(300), null),
      auth,
      fc.array(fc.tuple(token, value), { maxLength: 5 }),
      fc.option(fc.constantFrom("-1", "abc", "99999999999999999999", "0", "10", "1, 2"), { nil: undefined }),
      fc.option(fc.constantFrom("chunked", "gzip", "chunked, chunked", "identity"), { nil: undefined }),
      fc.uint8Array({ maxLength: 200 }),
      async (m, ep, q, version, host, authOf, extra, contentLength, te, bodyBytes) => {
        cases++;
        const target = `${ep()[0]}${q}`;
        let head = `${m} ${target} ${version}\r\n`;
        if (host !== null) head += `Host: ${host}\r\n`;
        const a = authOf();
        if (a) head += `Authorization: ${a}\r\n`;
        for (const [k, v] of extra) head += `${k}: ${v}\r\n`;
        if (contentLength !== undefined) head += `Content-Length: ${contentLength}\r\n`;
        if (te !== undefined) head += `Transfer-Encoding: ${te}\r\n`;
        head += "Connection: close\r\n\r\n";
        const status = await rawRequest(server.port, head, bodyBytes);
        // 505 is the one 5xx the client causes: RFC 9110 §15.6.6, a request line whose major
        // version the server does not speak (HTTP/2.0 in plain text); any other 5xx is a failure.
        const versionRefused = status === 505 && !/^HTTP\/1\.[01]$/.test(version);
        if (status >= 500 && !versionRefused)
          rawErrors.push(`${JSON.stringify(head.slice(0, 200))} -> ${status}`);
        expect(versionRefused || status < 500).toBe(true);
        const now = await snapshot();
        if (status >= 300 || /^(GET|HEAD|OPTIONS) /.test(head)) {
          if (now !== baseline)
            rawErrors.push(`changed state: ${JSON.stringify(head.slice(0, 200))} (${status})`);
          expect(now).toBe(baseline);
        }
        baseline = now;
      },
    ),
    { numRuns: Math.ceil(RUNS / 2), seed, endOnFailure: true },
  );
  const health = await fetch(`${server.url}/health`).then((r) => r.status);
  // Routing must not depend on the Host header's length (a plain reverse proxy sends `Host: api`).
  const shortHosts: Record<string, number> = {};
  for (const h of ["api", "a.b", "x:1", "a"])
    shortHosts[h] = await rawRequest(
      server.port,
      `GET /health HTTP/1.1\r\nHost: ${h}\r\nConnection: close\r\n\r\n`,
      new Uint8Array(0),
    );
  reportFigure("fuzz_cases", cases);
  expect(server.proc.exitCode).toBeNull();
  expect(health).toBe(200);
  expect(rawErrors).toEqual([]);
  expect(shortHosts).toEqual({ api: 200, "a.b": 200, "x:1": 200, a: 200 });
}, 300_000);
