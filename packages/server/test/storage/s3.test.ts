/**
 * The S3 backend against a real S3 server (Ceph RGW, see test/support/s3-server.ts): the shared
 * BlobStore conformance suite, then S3-specific cases: the key layout in the bucket, object
 * sizes at both ends, a connection cut mid-PUT, bucket creation and start-up errors, and faults
 * injected through a fake minio client.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, Socket } from "node:net";
import { Readable } from "node:stream";
import type { S3Config } from "../../src/config/config.ts";
import { BlobNotFoundError } from "../../src/storage/blob-store.ts";
import { createS3BlobStore, S3BlobStore, type S3Client } from "../../src/storage/s3.ts";
import { removeTestBucket, s3TestConfig, skipS3, testClient } from "../support/s3-server.ts";
import {
  blobStoreConformance,
  bodyOf,
  digestOf,
  generatedBody,
  generatedDigest,
  pattern,
  readAll,
  rejection,
  SETUP_TIMEOUT_MS,
} from "./conformance.ts";

const MiB = 1024 * 1024;

/** Builds a store on a fresh bucket of the test server; `cleanup` removes the bucket. */
async function realStore(label: string, prefix: string, patch: Partial<S3Config> = {}) {
  const cfg = { ...(await s3TestConfig(label, prefix)), ...patch };
  const store = createS3BlobStore(cfg);
  await store.check();
  return {
    cfg,
    store,
    cleanup: async () => {
      await store.close();
      await removeTestBucket(cfg);
    },
  };
}

if (skipS3) {
  test.skip("S3 backend suites (skipped: ESYNC_TEST_SKIP_S3=1)", () => {});
} else {
  blobStoreConformance("s3 on Ceph RGW, key prefix 'blobs'", () => realStore("conformance", "blobs"));

  describe("S3BlobStore on Ceph RGW", () => {
    let ctx: Awaited<ReturnType<typeof realStore>>;
    beforeAll(async () => {
      ctx = await realStore("s3-edge", "");
    }, SETUP_TIMEOUT_MS);
    afterAll(async () => {
      await ctx?.cleanup();
    }, 60_000);

    test("with an empty prefix, key k is the object k in the bucket", async () => {
      await ctx.store.put("blob1/0", bodyOf(pattern(3, 1)), 3);
      const names: string[] = [];
      for await (const item of testClient(ctx.cfg).listObjectsV2(ctx.cfg.bucket, "blob1/", true))
        names.push(item.name!);
      expect(names).toEqual(["blob1/0"]);
    });

    test("with prefix p, key k is the object p/k and list returns k without p", async () => {
      const cfg = { ...ctx.cfg, prefix: "tenant/blobs" };
      const store = createS3BlobStore(cfg);
      await store.put("blob2/7", bodyOf(pattern(4, 2)), 4);
      const stat = await testClient(cfg).statObject(cfg.bucket, "tenant/blobs/blob2/7");
      expect(stat.size).toBe(4);
      expect(await store.list("blob2/")).toEqual(["blob2/7"]);
      expect(await ctx.store.list("tenant/")).toEqual(["tenant/blobs/blob2/7"]);
      await store.deletePrefix("blob2/");
      expect(await ctx.store.list("tenant/")).toEqual([]);
      await store.close();
    });

    test("a 1-byte object is stored as a single PUT and read back whole and by range", async () => {
      await ctx.store.put("one/0", bodyOf(new Uint8Array([42])), 1);
      expect(await ctx.store.size("one/0")).toBe(1);
      expect(await readAll(await ctx.store.get("one/0"))).toEqual(new Uint8Array([42]));
      expect(await readAll(await ctx.store.get("one/0", { start: 0, end: 1 }))).toEqual(new Uint8Array([42]));
      expect((await readAll(await ctx.store.get("one/0", { start: 1, end: 2 }))).byteLength).toBe(0);
    });

    test("16 MiB objects (above S3's 5 MiB multipart minimum, no multipart used) round-trip intact", async () => {
      const size = 16 * MiB;
      await Promise.all(
        [0, 1].map((i) => ctx.store.put(`big/${i}`, generatedBody(size, 50 + i, 64 * 1024), size)),
      );
      for (const i of [0, 1]) {
        expect(await digestOf(await ctx.store.get(`big/${i}`))).toEqual({
          size,
          sha256: generatedDigest(size, 50 + i, 64 * 1024),
        });
      }
      // Exactly one object per key: no multipart upload was left open.
      const uploads: unknown[] = [];
      for await (const u of testClient(ctx.cfg).listIncompleteUploads(ctx.cfg.bucket, "big/", true))
        uploads.push(u);
      expect(uploads).toEqual([]);
    });

    test("a PUT whose connection is cut mid-body fails and leaves the previous object unchanged", async () => {
      const original = pattern(1000, 60);
      await ctx.store.put("cut/0", bodyOf(original), 1000);
      // A TCP proxy to RGW that drops both connections after 2 MiB of request bytes.
      const url = new URL(ctx.cfg.endpoint);
      const proxy = await cuttingProxy(url.hostname, Number(url.port), 2 * MiB);
      const viaProxy = createS3BlobStore({ ...ctx.cfg, endpoint: `http://127.0.0.1:${proxy.port}` });
      try {
        const err = await rejection(viaProxy.put("cut/0", generatedBody(8 * MiB, 61), 8 * MiB));
        expect(err).toBeInstanceOf(Error);
        expect(proxy.cut()).toBe(true);
        const err2 = await rejection(viaProxy.put("cut/1", generatedBody(8 * MiB, 62), 8 * MiB));
        expect(err2).toBeInstanceOf(Error);
      } finally {
        await viaProxy.close();
        await proxy.close();
      }
      expect(await readAll(await ctx.store.get("cut/0"))).toEqual(original);
      expect(await ctx.store.size("cut/1")).toBeNull();
      expect((await ctx.store.list("cut/")).sort()).toEqual(["cut/0"]);
    });

    test("check creates the bucket when it is missing", async () => {
      const cfg = await s3TestConfig("check-create");
      const store = createS3BlobStore(cfg);
      try {
        expect(await testClient(cfg).bucketExists(cfg.bucket)).toBe(false);
        await store.check();
        expect(await testClient(cfg).bucketExists(cfg.bucket)).toBe(true);
        await store.check();
      } finally {
        await store.close();
        await removeTestBucket(cfg);
      }
    });

    test("check fails with an error naming the endpoint when the credentials are wrong", async () => {
      const store = createS3BlobStore({ ...ctx.cfg, secretKey: "wrong-secret" });
      const err = (await rejection(store.check())) as Error;
      expect(err.message).toContain(ctx.cfg.endpoint);
      expect(err.message).toContain("refused");
      await store.close();
    });

    test("operations on a missing bucket propagate NoSuchBucket instead of reporting not found", async () => {
      const store = createS3BlobStore({ ...ctx.cfg, bucket: "esync-no-such-bucket-here" });
      const err = await rejection(store.get("a/0"));
      expect(err).not.toBeInstanceOf(BlobNotFoundError);
      expect((err as { code?: string }).code).toBe("NoSuchBucket");
      await store.close();
    });
  });
}

test("check fails with an error naming the endpoint when nothing listens there", async () => {
  const port = closedPort();
  const store = createS3BlobStore({
    endpoint: `http://127.0.0.1:${port}`,
    bucket: "esync-unreachable",
    accessKey: "a",
    secretKey: "b",
    region: "us-east-1",
    prefix: "",
  });
  const err = (await rejection(store.check())) as Error;
  expect(err.message).toContain(
    `S3 endpoint http://127.0.0.1:${port} (bucket esync-unreachable) is unreachable`,
  );
  await store.close();
});

describe("S3BlobStore with a fake minio client", () => {
  test("a request failing mid-body rejects put with the S3 error, cancels the body, and stores nothing", async () => {
    const fake = new FakeS3();
    fake.failPutAfter = 256 * 1024;
    const store = fakeStore(fake);
    await store.put("k/0", bodyOf(pattern(10, 1)), 10);
    let cancelled = false;
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 64 * 1024;
        c.enqueue(pattern(64 * 1024, pulled));
      },
      cancel() {
        cancelled = true;
      },
    });
    const err = await rejection(store.put("k/0", body, 4 * MiB));
    expect((err as { code?: string }).code).toBe("ECONNRESET");
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(4 * MiB);
    expect(fake.objects.get("k/0")).toEqual(pattern(10, 1));
    expect([...fake.objects.keys()]).toEqual(["k/0"]);
  });

  test("put streams: the source is read only as fast as the request sends it", async () => {
    const fake = new FakeS3();
    fake.stallPutAfter = 1 * MiB;
    const store = fakeStore(fake);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 64 * 1024;
        c.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const put = store.put("k/big", body, 64 * MiB).catch(() => {});
    await Bun.sleep(300);
    expect(pulled).toBeGreaterThanOrEqual(1 * MiB);
    expect(pulled).toBeLessThan(2 * MiB);
    fake.release?.();
    await put;
  });

  test("the final byte is sent only once the body has ended with exactly the declared length", async () => {
    const fake = new FakeS3();
    const store = fakeStore(fake);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let step = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (step++ === 0) return c.enqueue(pattern(1000, 2));
        await gate;
        c.close();
      },
    });
    const put = store.put("k/held", body, 1000);
    await Bun.sleep(50);
    expect(fake.received).toBe(999);
    release();
    await put;
    expect(fake.objects.get("k/held")).toEqual(pattern(1000, 2));
  });

  test("S3 errors other than NoSuchKey/NotFound propagate from get, size and list unchanged", async () => {
    const fake = new FakeS3();
    const denied = Object.assign(new Error("Access Denied"), { code: "AccessDenied" });
    fake.failReads = denied;
    const store = fakeStore(fake);
    expect(await rejection(store.get("k/0"))).toBe(denied);
    expect(await rejection(store.get("k/0", { start: 0, end: 5 }))).toBe(denied);
    expect(await rejection(store.size("k/0"))).toBe(denied);
    expect(await rejection(store.list("k/"))).toBe(denied);
  });

  test("delete sends at most 1000 keys per DeleteObjects request", async () => {
    const fake = new FakeS3();
    const store = fakeStore(fake, "pre");
    await store.delete(Array.from({ length: 2500 }, (_, i) => `b/${i}`));
    expect(fake.deleteBatches.map((b) => b.length)).toEqual([1000, 1000, 500]);
    expect(fake.deleteBatches[0]![0]).toBe("pre/b/0");
  });

  test("delete throws when DeleteObjects reports a per-key error", async () => {
    const fake = new FakeS3();
    fake.deleteErrors = [{ Code: "AccessDenied", Key: "b/1", Message: "Access Denied" }];
    const err = (await rejection(fakeStore(fake).delete(["b/1"]))) as Error;
    expect(err.message).toContain("AccessDenied");
    expect(err.message).toContain("b/1");
  });

  test("compose copies parts of 5 MiB server side, and throws leaving no object when minio aborts the copy silently", async () => {
    const fake = new FakeS3();
    const store = fakeStore(fake);
    const MiB = 1024 * 1024;
    fake.objects.set("a", new Uint8Array(5 * MiB).fill(1));
    fake.objects.set("b", new Uint8Array(10).fill(2));
    const sources = [
      { key: "a", length: 5 * MiB },
      { key: "b", length: 10 },
    ];
    await store.compose("all", sources);
    expect(fake.composed).toBe(1);
    expect(await store.size("all")).toBe(5 * MiB + 10);
    fake.abortCompose = true;
    await expect(store.compose("again", sources)).rejects.toThrow(/aborted/);
    expect(await store.size("again")).toBeNull();
  });

  test("compose of parts under 5 MiB streams them into one PUT instead of a multipart copy", async () => {
    const fake = new FakeS3();
    const store = fakeStore(fake);
    fake.objects.set("a", new Uint8Array(1000).fill(1));
    fake.objects.set("b", new Uint8Array(10).fill(2));
    await store.compose("all", [
      { key: "a", length: 1000 },
      { key: "b", length: 10 },
    ]);
    expect(fake.composed).toBe(0);
    expect(
      Buffer.from(fake.objects.get("all")!).equals(
        Buffer.concat([Buffer.alloc(1000, 1), Buffer.alloc(10, 2)]),
      ),
    ).toBe(true);
  });

  test("presignGet names the object under the prefix, valid the given seconds", async () => {
    const store = fakeStore(new FakeS3(), "pre");
    expect(await store.presignGet("b/o1/x", 300)).toBe("http://fake/fake/pre/b/o1/x?X-Amz-Expires=300");
  });

  test("deletePrefix deletes a large prefix in batches of at most 1000", async () => {
    const fake = new FakeS3();
    for (let i = 0; i < 2100; i++) fake.objects.set(`x/${i}`, new Uint8Array(0));
    fake.objects.set("y/0", new Uint8Array(0));
    await fakeStore(fake).deletePrefix("x/");
    expect(fake.deleteBatches.map((b) => b.length)).toEqual([1000, 1000, 100]);
    expect([...fake.objects.keys()]).toEqual(["y/0"]);
  });
});

/**
 * An in-memory stand-in for the minio client, and for the `fetch` that sends the store's writes
 * to the URLs it presigns, with fault switches.
 */
class FakeS3 implements S3Client {
  readonly objects = new Map<string, Uint8Array>();
  readonly deleteBatches: string[][] = [];
  /** Bytes of the body the last PUT has read. */
  received = 0;
  /** Fail a PUT with ECONNRESET after reading this many body bytes. */
  failPutAfter?: number;
  /** Stop reading a PUT's body after this many bytes until `release` is called. */
  stallPutAfter?: number;
  release?: () => void;
  failReads?: Error;
  deleteErrors: unknown[] = [];

  async presignedUrl(method: string, bucket: string, name: string): Promise<string> {
    return `http://fake/${bucket}/${name}?method=${method}`;
  }

  /** The store's `fetch`: a PUT of an object, read piece by piece with the fault switches. */
  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const name = decodeURIComponent(new URL(url).pathname.split("/").slice(2).join("/"));
    const pieces: Uint8Array[] = [];
    this.received = 0;
    if (init.body) {
      const reader = (init.body as ReadableStream<Uint8Array>).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pieces.push(value);
        this.received += value.byteLength;
        if (this.failPutAfter !== undefined && this.received >= this.failPutAfter) {
          await reader.cancel();
          throw Object.assign(new TypeError("ECONNRESET: The socket connection was closed"), {
            code: "ECONNRESET",
          });
        }
        if (this.stallPutAfter !== undefined && this.received >= this.stallPutAfter) {
          await new Promise<void>((r) => {
            this.release = r;
          });
          await reader.cancel();
          throw new Error("released");
        }
      }
    }
    const bytes = new Uint8Array(Buffer.concat(pieces));
    if (bytes.byteLength !== Number((init.headers as Record<string, string>)["Content-Length"]))
      throw new Error("incomplete body");
    this.objects.set(name, bytes);
    return new Response("", { status: 200, headers: { etag: '"x"' } });
  };

  private read(name: string): Uint8Array {
    if (this.failReads) throw this.failReads;
    const o = this.objects.get(name);
    if (!o) throw Object.assign(new Error("NoSuchKey"), { code: "NoSuchKey" });
    return o;
  }

  async getObject(_bucket: string, name: string): Promise<Readable> {
    return Readable.from([Buffer.from(this.read(name))]);
  }

  async getPartialObject(_bucket: string, name: string, offset: number, length = 0): Promise<Readable> {
    const o = this.read(name);
    if (offset >= o.byteLength) throw Object.assign(new Error("InvalidRange"), { code: "InvalidRange" });
    return Readable.from([Buffer.from(o.subarray(offset, length ? offset + length : undefined))]);
  }

  async statObject(_bucket: string, name: string): Promise<{ size: number }> {
    return { size: this.read(name).byteLength };
  }

  async *listObjectsV2(_bucket: string, prefix = ""): AsyncGenerator<{ name: string }> {
    if (this.failReads) throw this.failReads;
    for (const name of [...this.objects.keys()]) if (name.startsWith(prefix)) yield { name };
  }

  async removeObjects(_bucket: string, names: string[]): Promise<unknown[]> {
    this.deleteBatches.push(names);
    for (const n of names) this.objects.delete(n);
    return this.deleteErrors;
  }

  async bucketExists(): Promise<boolean> {
    return true;
  }

  async makeBucket(): Promise<void> {}

  async presignedGetObject(bucket: string, name: string, expires = 0): Promise<string> {
    return `http://fake/${bucket}/${name}?X-Amz-Expires=${expires}`;
  }

  /** Multipart uploads in progress: upload id → object name and parts (part number → bytes). */
  readonly uploads = new Map<string, { name: string; parts: Map<number, Uint8Array> }>();

  async completeMultipartUpload(
    _bucket: string,
    name: string,
    uploadId: string,
    etags: { part: number; etag?: string }[],
  ): Promise<unknown> {
    const u = this.uploads.get(uploadId);
    if (!u || u.name !== name) throw Object.assign(new Error("NoSuchUpload"), { code: "NoSuchUpload" });
    this.uploads.delete(uploadId);
    this.objects.set(name, new Uint8Array(Buffer.concat(etags.map((e) => u.parts.get(e.part)!))));
    return { etag: "x" };
  }

  async abortMultipartUpload(_bucket: string, _name: string, uploadId: string): Promise<void> {
    this.uploads.delete(uploadId);
  }

  async *listIncompleteUploads(
    _bucket: string,
    prefix: string,
  ): AsyncGenerator<{ key: string; uploadId: string }> {
    for (const [uploadId, u] of [...this.uploads])
      if (u.name.startsWith(prefix)) yield { key: u.name, uploadId };
  }

  /** Compose calls seen; with `abortCompose`, a part fails and the upload is aborted silently, as minio does. */
  composed = 0;
  abortCompose = false;

  async composeObject(dest: { Object: string }, sources: { Object: string }[]): Promise<unknown> {
    this.composed++;
    const parts = sources.map((src) => this.read(src.Object));
    if (this.abortCompose) return undefined;
    this.objects.set(dest.Object, new Uint8Array(Buffer.concat(parts)));
    return { etag: "x" };
  }
}

function fakeStore(fake: FakeS3, prefix = ""): S3BlobStore {
  return new S3BlobStore({
    client: fake,
    fetch: fake.fetch,
    bucket: "fake",
    prefix,
    region: "us-east-1",
    endpoint: "http://fake",
  });
}

/** A port on 127.0.0.1 with nothing listening (bound, then released). */
function closedPort(): number {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = l.port;
  l.stop(true);
  return port;
}

/** A TCP proxy to host:port that destroys both sides once `limit` request bytes have passed. */
async function cuttingProxy(host: string, port: number, limit: number) {
  let didCut = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client);
    sockets.add(upstream);
    let sent = 0;
    upstream.connect(port, host);
    client.on("data", (d: Buffer) => {
      sent += d.byteLength;
      if (sent >= limit) {
        didCut = true;
        client.destroy();
        upstream.destroy();
        return;
      }
      upstream.write(d);
    });
    upstream.on("data", (d: Buffer) => client.write(d));
    for (const s of [client, upstream]) {
      s.on("error", () => {});
      s.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    cut: () => didCut,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
