/**
 * @module client/encrypt-pool
 * A pool of worker threads that encrypt frames, so encryption (pure JS, the client's costly
 * step at roughly 70–130 MB/s per core) can use more than one core. Frames are independent
 * (each has its own nonce, docs/protocol.md#ciphertext), so `encryptStream` with a pool keeps several in
 * flight and emits them in order. The blob is byte-identical to the single-threaded one.
 *
 * Create one pool per process (e.g. per `esync push`), pass it to `encryptStream`,
 * `sealFile` or `uploadFile`, and `close()` it at the end. Idle workers do not keep the
 * process alive.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { encryptFrame } from "./frame.ts";

/**
 * The worker module: `encrypt-worker.ts` beside this file when run from source, or
 * `encrypt-worker.js` when the library is bundled (the packed CLI, scripts/pack-cli.ts, emits the
 * worker as its own file next to the bundle).
 */
const WORKER_URL = (() => {
  const source = new URL("./encrypt-worker.ts", import.meta.url);
  return existsSync(fileURLToPath(source))
    ? source.href
    : new URL("./encrypt-worker.js", import.meta.url).href;
})();

/** Bun's Worker, which can be ref'd and unref'd (not in the DOM typings). */
type BunWorker = Worker & { ref(): void; unref(): void };

interface Pending {
  resolve: (frame: Uint8Array) => void;
  reject: (e: Error) => void;
}

/** Encrypts frames on `size` worker threads. */
export class EncryptPool {
  private readonly workers: BunWorker[] = [];
  private readonly pending = new Map<number, Pending>();
  private busy: number[] = [];
  private nextId = 1;
  private closed = false;

  /** `size` workers; default the number of cores. */
  constructor(readonly size: number = navigator.hardwareConcurrency || 1) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`pool size must be a positive integer, got ${size}`);
    for (let i = 0; i < size; i++) {
      const w = new Worker(WORKER_URL) as BunWorker;
      w.onmessage = (event: MessageEvent<{ id: number; frame?: Uint8Array; error?: string }>) => {
        const { id, frame, error } = event.data;
        const p = this.pending.get(id);
        if (!p) return;
        this.pending.delete(id);
        this.busy[i] = (this.busy[i] as number) - 1;
        if (this.busy[i] === 0) w.unref();
        if (frame) p.resolve(frame);
        else p.reject(new Error(error ?? "frame encryption failed"));
      };
      w.unref();
      this.workers.push(w);
    }
    this.busy = Array(size).fill(0);
  }

  /**
   * Frame `index` of `plaintext` (≤ 256 KiB), encoded `[len][ct][tag]`, as `encryptFrame` would
   * give. The plaintext is copied before it is handed to a worker; the caller keeps its buffer.
   */
  encryptFrame(
    key: Uint8Array,
    baseNonce: Uint8Array,
    index: number,
    plaintext: Uint8Array,
  ): Promise<Uint8Array> {
    if (this.closed) return Promise.resolve(encryptFrame(key, baseNonce, index, plaintext));
    let w = 0;
    for (let i = 1; i < this.size; i++) if ((this.busy[i] as number) < (this.busy[w] as number)) w = i;
    const worker = this.workers[w] as BunWorker;
    if (this.busy[w] === 0) worker.ref();
    this.busy[w] = (this.busy[w] as number) + 1;
    const id = this.nextId++;
    const copy = plaintext.slice();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, key, baseNonce, index, plaintext: copy }, [copy.buffer]);
    });
  }

  /** Stops the workers; frames asked for afterwards are encrypted on the calling thread. */
  close(): void {
    this.closed = true;
    for (const w of this.workers) w.terminate();
    for (const p of this.pending.values()) p.reject(new Error("encrypt pool closed"));
    this.pending.clear();
  }
}
