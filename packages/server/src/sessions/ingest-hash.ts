/**
 * @module server/sessions/ingest-hash
 * Hashes a session's chunks in index order while the upload is still running, so that finalize
 * has little or nothing left to read (architecture: "hash chunks while they stream in").
 *
 * BLAKE3 of the whole ciphertext needs the chunks in order, and no available binding exposes
 * subtree chaining values, so per-chunk hashes cannot be combined. Instead each session keeps one
 * running hasher and a cursor `next`:
 * - a chunk PUT whose index is `next` feeds its bytes to the hasher as they stream to the store
 *   (a "tap"), so an in-order upload is hashed with no extra read;
 * - a chunk PUT ahead of `next` keeps its bytes in memory (a look-ahead, within a global byte
 *   budget) until its turn comes, so out-of-order chunks of a parallel upload are not read back;
 * - once a chunk is recorded, a catch-up task hashes the recorded chunks `next, next+1, ...`,
 *   from look-ahead memory when it holds that generation, else read back from the store.
 *
 * The state is per process and best-effort: it is dropped on any doubt (a failed tap, a
 * re-upload of a hashed index, an error) and is never trusted blindly. Finalize compares the
 * generation hashed for every index with the generations it snapshotted and falls back to a full
 * pass when they differ, so correctness never depends on this module; another API node, or a
 * restart, simply finalizes with a full pass.
 */
import { type Blake3, createBlake3 } from "@esync/protocol/blake3.ts";
import { piecesOwned, releasePiece } from "../util/release.ts";

/** Where a catch-up finds recorded chunks. */
export interface RecordedChunks {
  /** Generation recorded for chunk `index` of the session, or null when not (yet) received. */
  recordedGen(index: number): Promise<string | null>;
  /**
   * Streams the stored object of chunk `index`, generation `gen`. Absent when the chunks cannot
   * be read before finalize (parts of a multipart upload): the catch-up then stops at the first
   * chunk whose bytes it does not hold, and finalize reads the rest of the assembled object.
   */
  open?(index: number, gen: string): Promise<ReadableStream<Uint8Array>>;
}

/** A tap on one chunk PUT: feed its bytes, then report how it ended. */
export interface Tap {
  /** Feeds a piece of the chunk body (in order). */
  update(piece: Uint8Array): void;
  /** The chunk was stored and recorded as generation `gen`. */
  done(gen: string): void;
  /** The PUT failed or was not recorded: the hasher holds partial data and is dropped. */
  fail(): void;
}

/** What finalize gets back: a hasher holding chunks `0..from-1` (exactly `gens`). */
export interface HashedPrefix {
  hasher: Blake3;
  /** First chunk index not yet hashed. */
  from: number;
}

/** Bytes of a recorded chunk kept for the catch-up (`data.byteLength` bytes, from the pool). */
interface Held {
  gen: string;
  data: Uint8Array;
}

/**
 * Look-ahead buffers for reuse: a held chunk is copied into one buffer of its size, and the
 * buffer comes back here once the chunk is hashed or dropped. Reusing them keeps the process's
 * memory near the look-ahead budget; fresh copies of every piece left freeing to the garbage
 * collector, which let the resident size run to several times the budget (S3, c=8).
 */
class BufferPool {
  private readonly free: ArrayBuffer[] = [];
  private retained = 0;

  /** @param maxBytes most bytes kept for reuse; buffers given back beyond it are let go. */
  constructor(private readonly maxBytes: number) {}

  /** A buffer of exactly `n` bytes (a view of a pooled one when one is large enough). */
  take(n: number): Uint8Array {
    const i = this.free.findIndex((b) => b.byteLength >= n);
    if (i < 0) return new Uint8Array(n);
    const [b] = this.free.splice(i, 1);
    this.retained -= b!.byteLength;
    return new Uint8Array(b!, 0, n);
  }

  /** Gives back a buffer from `take`; its bytes must not be used afterwards. */
  give(u: Uint8Array): void {
    const b = u.buffer as ArrayBuffer;
    if (this.retained + b.byteLength > this.maxBytes) return;
    this.free.push(b);
    this.retained += b.byteLength;
  }
}

interface State {
  hasher: Blake3;
  /** Look-ahead: recorded chunks ahead of `next` whose bytes are in memory. */
  held: Map<number, Held>;
  /** Chunks `0..next-1` have been fed to the hasher. */
  next: number;
  /** Generation fed for each index below `next`. */
  gens: string[];
  /** A tap or a catch-up is feeding the hasher. */
  busy: boolean;
  /** The running catch-up, if any. */
  catchUp: Promise<void> | null;
  /** A chunk was recorded while the catch-up was looking up the next one: look again. */
  recheck: boolean;
}

/** Running in-order hashes of live sessions in this process. */
export class IngestHashes {
  private readonly states = new Map<string, State>();

  /** Look-ahead bytes held across all sessions. */
  private heldBytes = 0;

  private readonly pool: BufferPool;

  /**
   * @param maxSessions most sessions tracked at once; the oldest idle one is evicted beyond it.
   * @param lookaheadBytes most chunk bytes held in memory across all sessions (default 64 MiB).
   */
  constructor(
    private readonly maxSessions = 4096,
    private readonly lookaheadBytes = 64 * 1024 * 1024,
  ) {
    this.pool = new BufferPool(lookaheadBytes);
  }

  /** Drops a session's state and releases its look-ahead memory. */
  private drop(sessionId: string, st: State): void {
    if (this.states.get(sessionId) === st) this.states.delete(sessionId);
    this.release(st);
  }

  private release(st: State): void {
    for (const h of st.held.values()) this.unreserve(h.data);
    st.held.clear();
  }

  /** Returns a look-ahead buffer (held or being filled) to the pool and its bytes to the budget. */
  private unreserve(data: Uint8Array): void {
    this.heldBytes -= data.byteLength;
    this.pool.give(data);
  }

  private state(sessionId: string): State {
    let st = this.states.get(sessionId);
    if (!st) {
      if (this.states.size >= this.maxSessions) {
        for (const [id, s] of this.states) {
          if (!s.busy) {
            this.drop(id, s);
            break;
          }
        }
      }
      st = {
        hasher: createBlake3(),
        held: new Map(),
        next: 0,
        gens: [],
        busy: false,
        catchUp: null,
        recheck: false,
      };
      this.states.set(sessionId, st);
    }
    return st;
  }

  /**
   * A tap for a chunk PUT of `length` bytes: feeding the hasher when `index` is the next to hash
   * and nothing else feeds it; holding the bytes when `index` is ahead and the look-ahead budget
   * allows; else null (the catch-up will read the chunk back from the store).
   */
  tap(sessionId: string, index: number, length = 0): Tap | null {
    const st = this.state(sessionId);
    if (index > st.next && length > 0 && this.heldBytes + length <= this.lookaheadBytes) {
      return this.hold(sessionId, st, index, length);
    }
    if (st.busy || st.next !== index) return null;
    st.busy = true;
    let open = true;
    return {
      update: (piece) => {
        if (open) st.hasher.update(piece);
      },
      done: (gen) => {
        if (!open) return;
        open = false;
        st.gens[index] = gen;
        st.next = index + 1;
        st.busy = false;
      },
      fail: () => {
        if (!open) return;
        open = false;
        this.drop(sessionId, st);
      },
    };
  }

  /**
   * A look-ahead tap: copies the chunk (reserving `length` bytes) into a pooled buffer and keeps
   * it until it is recorded. A body that turns out longer or shorter than `length` is not kept.
   */
  private hold(sessionId: string, st: State, index: number, length: number): Tap {
    this.heldBytes += length;
    // A copy: the body's buffers may be reused by the HTTP layer once a piece is consumed (and a
    // view of a node `Buffer` would keep alive whatever larger allocation it is part of).
    const data = this.pool.take(length);
    let filled = 0;
    let open = true;
    const unreserve = () => {
      if (!open) return;
      open = false;
      this.unreserve(data);
    };
    return {
      update: (piece) => {
        if (!open) return;
        if (filled + piece.byteLength > length) return unreserve();
        data.set(piece, filled);
        filled += piece.byteLength;
      },
      done: (gen) => {
        if (!open) return;
        // Still ahead, complete, and the session still tracked: keep it for the catch-up (a
        // later upload of the same index replaces it; the catch-up checks the generation).
        if (filled !== length || this.states.get(sessionId) !== st || index < st.next) return unreserve();
        open = false;
        const prev = st.held.get(index);
        if (prev) this.unreserve(prev.data);
        st.held.set(index, { gen, data });
      },
      fail: unreserve,
    };
  }

  /**
   * Chunk `index` was recorded as generation `gen`. Drops the state when that index was already
   * hashed with another generation; otherwise starts a catch-up over the recorded chunks.
   */
  recorded(sessionId: string, index: number, gen: string, chunks: RecordedChunks): void {
    const st = this.states.get(sessionId);
    if (st && index < st.next && st.gens[index] !== gen) {
      this.drop(sessionId, st);
      return;
    }
    this.advance(sessionId, chunks);
  }

  /** Starts a catch-up for the session unless one is running or a tap is feeding. */
  private advance(sessionId: string, chunks: RecordedChunks): void {
    const st = this.state(sessionId);
    if (st.catchUp || st.busy) {
      st.recheck = true;
      return;
    }
    st.catchUp = (async () => {
      try {
        for (;;) {
          if (this.states.get(sessionId) !== st) return;
          st.recheck = false;
          const index = st.next;
          // The look-up leaves the hasher free: a tap for `index` may start meanwhile.
          const gen = await chunks.recordedGen(index);
          if (this.states.get(sessionId) !== st) return;
          if (st.busy) return; // a tap is feeding; its `recorded` starts the next catch-up
          if (st.next !== index) continue; // a tap fed `index` meanwhile
          if (gen === null) {
            if (st.recheck) continue;
            return;
          }
          const held = st.held.get(st.next);
          const fromMemory = held?.gen === gen;
          if (!fromMemory && !chunks.open) return;
          st.busy = true; // from here on only this catch-up moves `st.next`
          if (held) {
            st.held.delete(st.next);
            if (fromMemory) st.hasher.update(held.data);
            this.unreserve(held.data);
          }
          if (!fromMemory && chunks.open) {
            const stream = await chunks.open(st.next, gen);
            const release = piecesOwned(stream);
            const reader = stream.getReader();
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              st.hasher.update(value);
              if (release) releasePiece(value);
            }
          }
          st.gens[st.next] = gen;
          st.next++;
          st.busy = false;
        }
      } catch {
        st.busy = false;
        this.drop(sessionId, st);
      } finally {
        st.catchUp = null;
      }
    })();
  }

  /**
   * Hands the session's running hash to finalize and forgets it. Waits for a running catch-up;
   * returns null (full pass needed) when a tap is still feeding or the hashed generations differ
   * from `gens`, the generations finalize snapshotted for every index.
   */
  async take(sessionId: string, gens: readonly string[]): Promise<HashedPrefix | null> {
    const st = this.states.get(sessionId);
    if (!st) return null;
    if (st.catchUp) await st.catchUp;
    if (this.states.get(sessionId) !== st) return null; // dropped while catching up
    this.drop(sessionId, st);
    if (st.busy) return null;
    for (let i = 0; i < st.next; i++) if (st.gens[i] !== gens[i]) return null;
    return { hasher: st.hasher, from: st.next };
  }

  /** Forgets a session (deleted, expired or finalized), releasing its look-ahead memory. */
  forget(sessionId: string): void {
    const st = this.states.get(sessionId);
    if (st) this.drop(sessionId, st);
  }

  /** Look-ahead bytes currently held (for tests). */
  get lookaheadInUse(): number {
    return this.heldBytes;
  }

  /** Sessions tracked (for tests). */
  get size(): number {
    return this.states.size;
  }
}
