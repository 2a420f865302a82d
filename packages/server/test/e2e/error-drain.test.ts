/**
 * Error answers reach a client that is still sending: an oversized chunked JSON body on
 * `/register_folder`, `/upload/session` and `/rename_files`, from clients that never stop sending,
 * 15 at a time, is answered 413 `payload_too_large` and the client reads the whole answer before
 * the connection closes, in every run (docs/operator-guide.md#error-answers-and-draining).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import { newUser, type TestUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const ROUTES = ["/register_folder", "/upload/session", "/rename_files"];
const RUNS = 20;
const AT_ONCE = 5;

let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/**
 * Sends a chunked JSON body to `route` without end (64 KiB frames as fast as the server takes
 * them) until the server closes; resolves with what the client read.
 */
function flood(user: TestUser, route: string): Promise<{ text: string; error: string }> {
  return new Promise((resolve) => {
    let text = "";
    let error = "";
    const s = net.connect(server.port, "127.0.0.1", async () => {
      s.write(
        `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${user.auth}\r\n` +
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      );
      const piece = Buffer.alloc(64 * 1024, 0x20);
      const frame = Buffer.concat([
        Buffer.from(`${piece.length.toString(16)}\r\n`),
        piece,
        Buffer.from("\r\n"),
      ]);
      while (!s.destroyed && !s.writableEnded) {
        if (!s.write(frame))
          await new Promise<void>((r) => {
            const done = () => {
              s.off("drain", done);
              s.off("close", done);
              r();
            };
            s.on("drain", done);
            s.on("close", done);
          });
      }
    });
    s.on("data", (d: Buffer) => {
      text += d.toString("latin1");
    });
    s.on("error", (e) => {
      error = (e as NodeJS.ErrnoException).code ?? String(e);
    });
    s.on("close", () => resolve({ text, error }));
  });
}

/** Status and error code of the answer in `text` (chunked or not), or null when incomplete. */
function answerOf(text: string): { status: number; code: string } | null {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  const code = /"error":"([a-z_]+)"/.exec(text);
  return m && code ? { status: Number(m[1]), code: code[1]! } : null;
}

test("20 of 20 runs of clients that keep sending an oversized chunked JSON body read the 413 payload_too_large answer", async () => {
  const user = newUser();
  const outcomes: string[] = [];
  for (let run = 0; run < RUNS; run += AT_ONCE) {
    const batch = await Promise.all(
      [...Array(AT_ONCE)].flatMap(() =>
        ROUTES.map((route) => flood(user, route).then((r) => ({ route, ...r }))),
      ),
    );
    for (const r of batch) {
      const a = answerOf(r.text);
      outcomes.push(a ? `${a.status} ${a.code}` : `none (${r.error || "closed"})`);
    }
  }
  const received = outcomes.filter((o) => o === "413 payload_too_large").length;
  console.log(
    `error-drain: ${received}/${outcomes.length} answers read; ${[...new Set(outcomes)].join(", ")}`,
  );
  expect(outcomes.length).toBe(RUNS * ROUTES.length);
  expect(received).toBe(outcomes.length);
}, 300_000);
