/**
 * @module client/byte-stream
 * Small helpers over web `ReadableStream<Uint8Array>`: reading exact byte counts from a stream
 * of arbitrary chunks, and tapping a stream (to hash or count what passes) without copying.
 */

/** Reads exact byte counts from a stream whose chunks have arbitrary sizes. */
export class ExactReader {
  private readonly chunks: Uint8Array[] = [];
  private buffered = 0;
  private ended = false;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(source: ReadableStream<Uint8Array>) {
    this.reader = source.getReader();
  }

  private async fill(n: number): Promise<void> {
    while (this.buffered < n && !this.ended) {
      const r = await this.reader.read();
      if (r.done) this.ended = true;
      else if (r.value.byteLength > 0) {
        this.chunks.push(r.value);
        this.buffered += r.value.byteLength;
      }
    }
  }

  /**
   * Exactly `n` bytes, or fewer (possibly none) only when the stream ends first. The result
   * may be a view into a source chunk (no copy) when one chunk holds all `n` bytes.
   */
  async read(n: number): Promise<Uint8Array> {
    await this.fill(n);
    const take = Math.min(n, this.buffered);
    const first = this.chunks[0];
    if (first && first.byteLength >= take) {
      const out = first.subarray(0, take);
      if (first.byteLength === take) this.chunks.shift();
      else this.chunks[0] = first.subarray(take);
      this.buffered -= take;
      return out;
    }
    const out = new Uint8Array(take);
    let at = 0;
    while (at < take) {
      const c = this.chunks[0] as Uint8Array;
      const part = Math.min(c.byteLength, take - at);
      out.set(c.subarray(0, part), at);
      at += part;
      if (part === c.byteLength) this.chunks.shift();
      else this.chunks[0] = c.subarray(part);
    }
    this.buffered -= take;
    return out;
  }

  /** True when no byte is left (reads ahead at most one chunk to know). */
  async atEnd(): Promise<boolean> {
    await this.fill(1);
    return this.buffered === 0;
  }

  /** Cancels the source stream. */
  cancel(reason?: unknown): Promise<void> {
    return this.reader.cancel(reason);
  }
}

/**
 * A stream that passes every chunk of `source` through unchanged, calling `onChunk` on each
 * first (hashing, counting, progress). Pull-driven: reads from `source` only when read itself.
 */
export function tapStream(
  source: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const r = await reader.read();
        if (r.done) {
          controller.close();
          return;
        }
        onChunk(r.value);
        controller.enqueue(r.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** Calls `fn` on every chunk of `stream` in order (awaiting it), until the stream ends. */
export async function forEachChunk(
  stream: ReadableStream<Uint8Array>,
  fn: (chunk: Uint8Array) => void | Promise<void>,
): Promise<void> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      await fn(r.value);
    }
  } catch (e) {
    await reader.cancel(e).catch(() => {});
    throw e;
  } finally {
    reader.releaseLock();
  }
}

/**
 * A byte array typed as a `BlobPart`/`BodyInit`. TypeScript's DOM types want an
 * `ArrayBuffer`-backed array; ours never sit on a `SharedArrayBuffer`.
 */
export function bodyBytes(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes as Uint8Array<ArrayBuffer>;
}

/** A stream of one byte array. */
export function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

/** Every byte of `stream`, concatenated (for small payloads and tests only). */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
