/**
 * The S3 store's request time-outs (src/storage/s3-timeouts.ts, docs/operator-guide.md#s3-time-outs) against local HTTP servers on 127.0.0.1 that misbehave as a stalled S3 would: one
 * that accepts connections and never reads or answers, one that reads a request and never
 * answers, one that sends a response's headers and then nothing. No real S3 is needed. Also
 * checks that a slow caller (a body supplied slowly, a download read slowly) is not taken for a
 * stalled S3.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import type { S3Config } from "../../src/config/config.ts";
import { createS3BlobStore } from "../../src/storage/s3.ts";
import { S3TimeoutError } from "../../src/storage/s3-timeouts.ts";

const TIMEOUTS = { connectTimeoutMs: 2_000, firstByteTimeoutMs: 600, idleTimeoutMs: 600 };

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A TCP server that accepts every connection and never reads or answers. */
async function blackHole(): Promise<number> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => {
    sockets.push(s);
    s.pause();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return (server.address() as { port: number }).port;
}

/** An HTTP server whose handler is `handle`. */
async function httpServer(handle: Parameters<typeof createHttpServer>[1]): Promise<number> {
  const server: HttpServer = createHttpServer(handle);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return (server.address() as { port: number }).port;
}

function storeAt(port: number, patch: Partial<S3Config> = {}) {
  const store = createS3BlobStore({
    endpoint: `http://127.0.0.1:${port}`,
    bucket: "esync-timeouts",
    accessKey: "k",
    secretKey: "s",
    region: "us-east-1",
    prefix: "",
    ...TIMEOUTS,
    ...patch,
  });
  closers.push(() => void store.close());
  return store;
}

/** How a promise settles, and after how many milliseconds. */
async function timed<T>(p: Promise<T>): Promise<{ ms: number; error: unknown; value?: T }> {
  const t0 = performance.now();
  try {
    const value = await p;
    return { ms: performance.now() - t0, error: undefined, value };
  } catch (error) {
    return { ms: performance.now() - t0, error };
  }
}

function bytes(n: number): ReadableStream<Uint8Array> {
  const piece = new Uint8Array(256 * 1024);
  let left = n;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (left === 0) return c.close();
      const k = Math.min(left, piece.length);
      left -= k;
      c.enqueue(piece.subarray(0, k));
    },
  });
}

async function drainAll(s: ReadableStream<Uint8Array>, pauseMs = 0): Promise<number> {
  let n = 0;
  for await (const piece of s) {
    n += piece.byteLength;
    if (pauseMs) await Bun.sleep(pauseMs);
  }
  return n;
}

describe("S3 request time-outs", () => {
  test("a PUT to a server that accepts and never reads fails with S3TimeoutError (idle) within the idle time-out", async () => {
    const store = storeAt(await blackHole());
    const r = await timed(store.put("b/1", bytes(32 * 1024 * 1024), 32 * 1024 * 1024));
    expect(r.error).toBeInstanceOf(S3TimeoutError);
    expect((r.error as S3TimeoutError).phase).toBe("idle");
    expect((r.error as S3TimeoutError).code).toBe("ETIMEDOUT");
    expect(r.ms).toBeLessThan(5_000);
  }, 20_000);

  test("a PUT whose body S3 reads but never answers fails with S3TimeoutError (first byte)", async () => {
    const port = await httpServer((req) => {
      req.resume(); // reads everything, answers nothing
    });
    const store = storeAt(port);
    const r = await timed(store.put("b/1", bytes(1024 * 1024), 1024 * 1024));
    expect(r.error).toBeInstanceOf(S3TimeoutError);
    expect((r.error as S3TimeoutError).phase).toBe("first byte");
    expect(r.ms).toBeGreaterThanOrEqual(550);
    expect(r.ms).toBeLessThan(5_000);
  }, 20_000);

  test("a GET, a HEAD, a DeleteObjects and the start of a multipart upload to a server that never answers fail with S3TimeoutError (first byte)", async () => {
    const store = storeAt(await blackHole());
    const calls: (() => Promise<unknown>)[] = [
      () => store.get("b/1"),
      () => store.size("b/1"),
      () => store.delete(["b/1"]),
      () => store.createMultipart("b/1"),
    ];
    for (const call of calls) {
      const r = await timed(call());
      expect(r.error).toBeInstanceOf(S3TimeoutError);
      expect((r.error as S3TimeoutError).phase).toBe("first byte");
      expect(r.ms).toBeLessThan(5_000);
    }
  }, 30_000);

  test("a GET whose body stops after the headers errors the stream with S3TimeoutError (idle)", async () => {
    const port = await httpServer((_req, res) => {
      res.writeHead(200, {
        "content-length": String(1024 * 1024),
        "content-type": "application/octet-stream",
      });
      res.write(Buffer.alloc(1000)); // then nothing
    });
    const store = storeAt(port);
    const stream = await store.get("b/1");
    const r = await timed(drainAll(stream));
    expect(r.error).toBeInstanceOf(S3TimeoutError);
    expect((r.error as S3TimeoutError).phase).toBe("idle");
    expect(r.ms).toBeLessThan(5_000);
  }, 20_000);

  test("a caller that supplies its PUT body slower than the idle time-out is not cut: the PUT succeeds", async () => {
    let received = 0;
    const port = await httpServer((req, res) => {
      req.on("data", (c: Buffer) => {
        received += c.length;
      });
      req.on("end", () => res.writeHead(200, { etag: '"x"' }).end());
    });
    const store = storeAt(port);
    let sent = 0;
    const slow = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent === 3) return c.close();
        await Bun.sleep(1_000); // > idle time-out, with nothing of ours pending at S3
        sent++;
        c.enqueue(new Uint8Array(1000));
      },
    });
    const r = await timed(store.put("b/1", slow, 3000));
    expect(r.error).toBeUndefined();
    expect(received).toBe(3000);
  }, 20_000);

  test("a download read slower than the idle time-out is not cut: every byte arrives", async () => {
    const size = 8 * 1024 * 1024;
    const port = await httpServer((_req, res) => {
      res.writeHead(200, { "content-length": String(size), "content-type": "application/octet-stream" });
      res.end(Buffer.alloc(size, 7));
    });
    const store = storeAt(port);
    const stream = await store.get("b/1");
    const reader = stream.getReader();
    let n = 0;
    await Bun.sleep(1_000); // the reader waits longer than the idle time-out before its first read
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
      if (n < 2 * 1024 * 1024) await Bun.sleep(200);
    }
    expect(n).toBe(size);
  }, 30_000);
});
