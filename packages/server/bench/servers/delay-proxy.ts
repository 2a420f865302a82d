/**
 * The latency link of `bench/upload.ts --compare --latency-ms N`: a TCP proxy, in a process of
 * its own (so that forwarding does not share an event loop with the bench's client), listening
 * on 127.0.0.1:<port> and forwarding to <target>, that delays every piece by <one-way-ms> in
 * each direction: a link with that latency, not a slower one.
 *
 * It runs on Bun's native sockets (`Bun.listen`, `Bun.connect`), which forward with less CPU per
 * byte than `node:net` (docs/benchmarks.md). Each direction keeps its pieces in one FIFO with the time each
 * is due, and one timer writes everything due; bytes the receiving socket does not take at once
 * wait for its `drain`, and meanwhile the sending socket is paused (TCP backpressure end to end).
 *
 *   bun bench/servers/delay-proxy.ts <port> <target-url> <one-way-ms>
 */
import type { Socket } from "bun";

const port = Number(process.argv[2]);
const target = new URL(process.argv[3]!);
const oneWayMs = Number(process.argv[4]);

/** One direction of a connection: pieces from `from`, delayed, written to `to`. */
class Lane {
  from: Socket<Conn> | null = null;
  to: Socket<Conn> | null = null;
  /** Pieces not yet due, with the time each is due (null: the end of the stream). */
  private readonly queue: { due: number; piece: Uint8Array | null }[] = [];
  /** Due bytes `to` has not taken yet, in order. */
  private readonly backlog: Uint8Array[] = [];
  private ended = false;
  private scheduled = false;

  push(piece: Uint8Array | null): void {
    this.queue.push({ due: performance.now() + oneWayMs, piece });
    if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(() => this.flush(), oneWayMs);
    }
  }

  /** Moves every due piece to the backlog and writes what `to` takes. */
  flush(): void {
    this.scheduled = false;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0]!.due <= now) {
      const { piece } = this.queue.shift()!;
      if (piece === null) this.ended = true;
      else this.backlog.push(piece);
    }
    this.drain();
    if (this.queue.length > 0) {
      this.scheduled = true;
      setTimeout(() => this.flush(), Math.max(0, this.queue[0]!.due - now));
    }
  }

  /** Writes the backlog until `to` stops taking bytes; pauses `from` while anything is left. */
  drain(): void {
    const to = this.to;
    if (!to) return;
    while (this.backlog.length > 0) {
      const piece = this.backlog[0]!;
      const n = to.write(piece);
      if (n < piece.byteLength) {
        this.backlog[0] = piece.subarray(Math.max(0, n));
        this.from?.pause();
        return;
      }
      this.backlog.shift();
    }
    this.from?.resume();
    if (this.ended) to.end();
  }
}

/** Per socket: the lane it reads into and the lane it is written from. */
interface Conn {
  inbound: Lane;
  outbound: Lane;
}

const handlers = {
  binaryType: "uint8array" as const,
  data(s: Socket<Conn>, d: Uint8Array) {
    s.data.inbound.push(d);
  },
  drain(s: Socket<Conn>) {
    s.data.outbound.drain();
  },
  end(s: Socket<Conn>) {
    s.data.inbound.push(null);
  },
  close(s: Socket<Conn>) {
    s.data.inbound.push(null);
  },
  error(s: Socket<Conn>) {
    s.data.inbound.to?.terminate();
  },
};

Bun.listen<Conn>({
  hostname: "127.0.0.1",
  port,
  socket: {
    ...handlers,
    open(client) {
      const up = new Lane(); // client → server
      const down = new Lane(); // server → client
      client.data = { inbound: up, outbound: down };
      up.from = client;
      down.to = client;
      void Bun.connect<Conn>({
        hostname: target.hostname,
        port: Number(target.port),
        data: { inbound: down, outbound: up },
        socket: {
          ...handlers,
          open(server) {
            down.from = server;
            up.to = server;
            up.drain();
          },
          connectError() {
            client.terminate();
          },
        },
      });
    },
  },
});
console.log("ready");
// A clean exit on SIGTERM, so that a `--cpu-prof` profile is written.
process.on("SIGTERM", () => process.exit(0));
