/**
 * The S3 store streams each chunk into one PUT through minio's `makeRequestStreamAsync`, which
 * minio marks `@internal`, with `enableSHA256 = false` (its public `putObject` reads a body of up
 * to 64 MiB into memory and hashes it before sending, or turns it into a multipart upload). So the
 * dependency is pinned to one exact version in package.json, and this test fails when that pin
 * drifts or when the internal's behaviour changes: it drives a real minio `Client` against a
 * local HTTP server and checks the request it sends.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Readable } from "node:stream";
import { Client } from "minio";
import minioPkg from "../../node_modules/minio/package.json" with { type: "json" };
import pkg from "../../package.json" with { type: "json" };
import { createS3Client } from "../../src/storage/s3.ts";

interface Seen {
  method: string;
  path: string;
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
      seen.push({
        method: req.method,
        path: new URL(req.url).pathname,
        headers: req.headers.toJSON(),
        bytes: body.byteLength,
      });
      return new Response("", { status: 200, headers: { etag: '"x"' } });
    },
  });
});

afterAll(() => server.stop(true));

describe("minio internals the S3 store relies on", () => {
  test("package.json pins minio to the exact version installed (no range)", () => {
    expect(pkg.dependencies.minio).toMatch(/^\d+\.\d+\.\d+$/);
    expect(minioPkg.version).toBe(pkg.dependencies.minio);
  });

  test("Client has makeRequestStreamAsync(options, body, sha256sum, statusCodes, region) and a writable enableSHA256", () => {
    const proto = Client.prototype as unknown as Record<string, unknown>;
    expect(typeof proto.makeRequestStreamAsync).toBe("function");
    expect((proto.makeRequestStreamAsync as (...a: unknown[]) => unknown).length).toBe(5);
    const { client, close } = createS3Client({
      endpoint: `http://127.0.0.1:${server.port}`,
      bucket: "b",
      accessKey: "k",
      secretKey: "s",
      region: "us-east-1",
      prefix: "",
    });
    expect(client.enableSHA256).toBe(false);
    close();
  });

  test("a streamed PUT goes out as one request with the given Content-Length and an UNSIGNED-PAYLOAD signature", async () => {
    const { client, close } = createS3Client({
      endpoint: `http://127.0.0.1:${server.port}`,
      bucket: "bucket-x",
      accessKey: "k",
      secretKey: "s",
      region: "us-east-1",
      prefix: "",
    });
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
});
