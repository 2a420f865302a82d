/**
 * The requests the S3 store's writes put on the wire (src/storage/s3.ts, docs/operator-guide.md#s3):
 * every write goes to a URL presigned by minio's public `presignedUrl` (query-signed,
 * `UNSIGNED-PAYLOAD`) and is sent by `fetch` as one request with a fixed `Content-Length`, the body
 * streamed, never chunked. Driven with the real `createS3BlobStore` against a local HTTP server
 * that records each request: an object PUT, the two multipart requests (the upload's start and a
 * part), and an S3 error reply.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isStorageError } from "../../src/app.ts";
import { createS3BlobStore, S3ReplyError } from "../../src/storage/s3.ts";

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: Uint8Array;
}
const seen: Seen[] = [];
let server: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = new Uint8Array(await req.arrayBuffer());
      const url = new URL(req.url);
      seen.push({
        method: req.method,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers.toJSON(),
        body,
      });
      if (url.pathname.endsWith("/denied"))
        return new Response(
          "<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>no &amp; never</Message></Error>",
          { status: 403, headers: { "content-type": "application/xml" } },
        );
      if (req.method === "POST" && url.searchParams.has("uploads"))
        return new Response(
          "<InitiateMultipartUploadResult><Bucket>bucket-x</Bucket><Key>k</Key><UploadId>2~a&amp;b</UploadId></InitiateMultipartUploadResult>",
          { status: 200, headers: { "content-type": "application/xml" } },
        );
      return new Response("", { status: 200, headers: { etag: '"x"' } });
    },
  });
});

afterAll(() => server.stop(true));

/** The real store for `bucket` on the recording server. */
function store() {
  return createS3BlobStore({
    endpoint: `http://127.0.0.1:${server.port}`,
    bucket: "bucket-x",
    accessKey: "k",
    secretKey: "s",
    region: "us-east-1",
    prefix: "",
  });
}

function body(...pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of pieces) c.enqueue(p);
      c.close();
    },
  });
}

/** Checks the presigned query of a write: AWS SigV4 for access key `k`, signed headers `host`. */
function expectPresigned(s: Seen): void {
  expect(s.query.get("X-Amz-Algorithm")).toBe("AWS4-HMAC-SHA256");
  expect(s.query.get("X-Amz-Credential")).toStartWith("k/");
  expect(s.query.get("X-Amz-SignedHeaders")).toBe("host");
  expect(s.query.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
  expect(s.headers.authorization).toBeUndefined();
  expect(s.headers["transfer-encoding"]).toBeUndefined();
}

describe("the S3 store's writes on the wire", () => {
  test("put goes out as one presigned PUT with the given Content-Length and the body byte-identical", async () => {
    const s = store();
    seen.length = 0;
    const a = new Uint8Array(100_000).fill(1);
    const b = new Uint8Array(23).fill(2);
    await s.put("a/b/0.gen", body(a, b), 100_023);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe("PUT");
    expect(seen[0]!.path).toBe("/bucket-x/a/b/0.gen");
    expect(seen[0]!.headers["content-length"]).toBe("100023");
    expect(Buffer.from(seen[0]!.body).equals(Buffer.concat([a, b]))).toBe(true);
    expectPresigned(seen[0]!);
    await s.close();
  });

  test("a multipart upload is opened with one presigned POST ?uploads and its parts go out as presigned PUT ?partNumber&uploadId", async () => {
    const s = store();
    seen.length = 0;
    const uploadId = await s.createMultipart("b/aa/obb");
    expect(uploadId).toBe("2~a&b");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "POST", path: "/bucket-x/b/aa/obb" });
    expect(seen[0]!.query.get("uploads")).toBe("");
    expect(seen[0]!.body.byteLength).toBe(0);
    expectPresigned(seen[0]!);
    seen.length = 0;
    const part = body(new Uint8Array(70_000).fill(1), new Uint8Array(5).fill(2));
    expect(await s.putPart("b/aa/obb", uploadId, 3, part, 70_005)).toBe("x");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "PUT", path: "/bucket-x/b/aa/obb" });
    expect(seen[0]!.query.get("partNumber")).toBe("3");
    expect(seen[0]!.query.get("uploadId")).toBe("2~a&b");
    expect(seen[0]!.headers["content-length"]).toBe("70005");
    expect(seen[0]!.body.byteLength).toBe(70_005);
    expectPresigned(seen[0]!);
    await s.close();
  });

  test("an S3 error reply rejects with S3ReplyError carrying its code and status (a storage error, not a client's)", async () => {
    const s = store();
    const e = await s.put("x/denied", body(new Uint8Array(10)), 10).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(S3ReplyError);
    expect(e).toMatchObject({ name: "S3Error", code: "AccessDenied", status: 403 });
    expect((e as Error).message).toContain("no & never");
    expect(isStorageError(e)).toBe(true);
    await s.close();
  });
});
