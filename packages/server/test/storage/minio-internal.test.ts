/**
 * The S3 store streams each chunk into one PUT through minio's `makeRequestStreamAsync`, which
 * minio marks `@internal`, with `enableSHA256 = false` (its public `putObject` reads a body of up
 * to 64 MiB into memory and hashes it before sending, or turns it into a multipart upload). So the
 * dependency is pinned to one exact version in package.json, and this test fails when that pin
 * drifts or when the internal's behaviour changes: it drives a real minio `Client` against a
 * local HTTP server and checks the requests it sends (an object PUT, and the two multipart
 * requests the store sends through it: the upload's start and a part).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "minio";
import minioPkg from "../../node_modules/minio/package.json" with { type: "json" };
import pkg from "../../package.json" with { type: "json" };
import { createS3Client, S3BlobStore } from "../../src/storage/s3.ts";

interface Seen {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  bytes: number;
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
        query: url.search,
        headers: req.headers.toJSON(),
        bytes: body.byteLength,
      });
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

/** A store client of the real `createS3Client` for `bucket` on the fake S3 server. */
function fakeClient(bucket: string): ReturnType<typeof createS3Client> {
  return createS3Client({
    endpoint: `http://127.0.0.1:${server.port}`,
    bucket,
    accessKey: "k",
    secretKey: "s",
    region: "us-east-1",
    prefix: "",
  });
}
describe("minio internals the S3 store relies on", () => {
  test("package.json pins minio to the exact version installed (no range)", () => {
    expect(pkg.dependencies.minio).toMatch(/^\d+\.\d+\.\d+$/);
    expect(minioPkg.version).toBe(pkg.dependencies.minio);
  });

  test("Client has makeRequestStreamAsync(options, body, sha256sum, statusCodes, region) and a writable enableSHA256", () => {
    const proto = Client.prototype as unknown as Record<string, unknown>;
    expect(typeof proto.makeRequestStreamAsync).toBe("function");
    expect((proto.makeRequestStreamAsync as (...a: unknown[]) => unknown).length).toBe(5);
    const { client, close } = fakeClient("b");
    expect(client.enableSHA256).toBe(false);
    close();
  });

  test("a streamed PUT goes out as one request with the given Content-Length and an UNSIGNED-PAYLOAD signature", async () => {
    const { client, close } = fakeClient("bucket-x");
    try {
      seen.length = 0;
      const pieces = [new Uint8Array(100_000).fill(1), new Uint8Array(23).fill(2)];
      const res = await (
        client as unknown as {
          makeRequestStreamAsync(
            o: object,
            body: Readable,
            sha: string,
            codes: number[],
            region: string,
          ): Promise<Readable>;
        }
      ).makeRequestStreamAsync(
        {
          method: "PUT",
          bucketName: "bucket-x",
          objectName: "a/b/0.gen",
          headers: { "Content-Length": "100023" },
        },
        Readable.from(pieces),
        "",
        [200],
        "",
      );
      res.resume();
      expect(seen).toHaveLength(1);
      expect(seen[0]!.method).toBe("PUT");
      expect(seen[0]!.path).toBe("/bucket-x/a/b/0.gen");
      expect(seen[0]!.bytes).toBe(100_023);
      expect(seen[0]!.headers["content-length"]).toBe("100023");
      expect(seen[0]!.headers["x-amz-content-sha256"]).toBe("UNSIGNED-PAYLOAD");
      expect(seen[0]!.headers.authorization).toStartWith("AWS4-HMAC-SHA256 ");
    } finally {
      close();
    }
  });

  test("a multipart upload is opened with one POST ?uploads and its parts go out as streamed PUT ?partNumber&uploadId, UNSIGNED-PAYLOAD", async () => {
    const { client, close } = fakeClient("bucket-x");
    const store = new S3BlobStore({
      client,
      bucket: "bucket-x",
      prefix: "",
      region: "us-east-1",
      endpoint: "x",
    });
    try {
      seen.length = 0;
      const uploadId = await store.createMultipart("b/aa/obb");
      expect(uploadId).toBe("2~a&b");
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        method: "POST",
        path: "/bucket-x/b/aa/obb",
        query: "?uploads",
        bytes: 0,
      });
      expect(seen[0]!.headers["x-amz-content-sha256"]).toBe("UNSIGNED-PAYLOAD");
      seen.length = 0;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new Uint8Array(70_000).fill(1));
          c.enqueue(new Uint8Array(5).fill(2));
          c.close();
        },
      });
      expect(await store.putPart("b/aa/obb", uploadId, 3, body, 70_005)).toBe("x");
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        method: "PUT",
        path: "/bucket-x/b/aa/obb",
        query: "?partNumber=3&uploadId=2~a%26b",
        bytes: 70_005,
      });
      expect(seen[0]!.headers["content-length"]).toBe("70005");
      expect(seen[0]!.headers["x-amz-content-sha256"]).toBe("UNSIGNED-PAYLOAD");
      expect(seen[0]!.headers.authorization).toStartWith("AWS4-HMAC-SHA256 ");
    } finally {
      close();
    }
  });
});
