/**
 * How Bun.serve's idle timer treats a file body sent by sendfile (docs/internals.md, "Downloads
 * and Content-Length"). Run: `bun docs/repro/bun-sendfile-timer.ts` (about a minute). The
 * server's `idleTimeout` is 10 s and the request's own timer is switched off, as esync does while
 * a handler runs. A 12 MiB file goes to (1) a client reading steadily at about 0.4 MB/s, which
 * takes three times the idle timeout, and (2) a client that reads 4 MB and then stops reading.
 * Seen on Bun 1.4.5: (1) completes; (2) is closed about one idle timeout (uSockets counts in 4 s
 * ticks) after it stopped. The send is not bounded by the timer as a whole: the timer restarts
 * when the socket takes more bytes, so a file body is cut only when the client takes nothing for
 * a whole idle timeout. Idle timeouts of 2–4 s on loopback, where the socket buffers hold about
 * 10 MB, cut steady readers too: keep the timeout well above the time a client needs to drain
 * half a send buffer.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SIZE = 12 * 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "bun-sendfile-"));
const path = join(dir, "f.bin");
writeFileSync(path, new Uint8Array(SIZE));
const t0 = performance.now();
const ms = () => Math.round(performance.now() - t0);
let closedAt = -1;
const server = Bun.serve({
  port: 0,
  idleTimeout: 10,
  fetch(req, srv) {
    srv.timeout(req, 0);
    req.signal.addEventListener("abort", () => {
      closedAt = ms();
    });
    return new Response(Bun.file(path), { status: 200 });
  },
});

/** Reads at `rate` bytes/s until `stopAfter` bytes; resolves with the bytes received. */
function client(rate: number, stopAfter: number, giveUpMs: number): Promise<number> {
  return new Promise((resolve) => {
    let got = 0;
    const s = net.connect(server.port, "127.0.0.1", () => s.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    const done = () => {
      s.destroy();
      resolve(got);
    };
    s.on("data", (d: Buffer) => {
      got += d.length;
      s.pause();
      if (got >= SIZE) return done();
      if (got < stopAfter) setTimeout(() => s.resume(), (d.length / rate) * 1000);
    });
    s.on("close", done);
    setTimeout(done, giveUpMs);
  });
}

let start = ms();
const steady = await client(0.4e6, Number.POSITIVE_INFINITY, 60_000);
console.log(`steady 0.4 MB/s: ${steady} of ${SIZE} bytes (plus headers) in ${ms() - start} ms`);
closedAt = -1;
start = ms();
const stalled = await client(3e6, 4e6, 30_000);
console.log(
  `stops after 4 MB: ${stalled} bytes; server closed the connection ${closedAt < 0 ? "never (gave up at 30 s)" : `${closedAt - start} ms after the request`}`,
);
server.stop(true);
rmSync(dir, { recursive: true, force: true });
