/**
 * A TCP proxy on 127.0.0.1 that can be stalled: while stalled it still accepts connections but
 * forwards nothing in either direction (bytes are held, not dropped), as a paused or hung S3
 * gateway behaves; `resume` forwards what was held and carries on. For tests of time-outs.
 */
import { createServer, type Server, Socket } from "node:net";

/** A running stall proxy. */
export interface StallProxy {
  port: number;
  /** From now on, forward nothing (connections stay open, new ones are accepted). */
  stall(): void;
  /** Forward again, starting with what was held. */
  resume(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `host:port`. */
export async function startStallProxy(host: string, port: number): Promise<StallProxy> {
  let stalled = false;
  const sockets = new Set<Socket>();
  const pipes = new Set<() => void>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
    // Each direction forwards piece by piece; while stalled, a piece is held and its source paused.
    const held: [Socket, Buffer][] = [];
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (d: Buffer) => {
        if (stalled) {
          held.push([to, d]);
          from.pause();
        } else {
          to.write(d);
        }
      });
    forward(client, upstream);
    forward(upstream, client);
    const flow = () => {
      if (stalled) return;
      for (const [to, d] of held.splice(0)) to.write(d);
      client.resume();
      upstream.resume();
    };
    pipes.add(flow);
    client.on("close", () => pipes.delete(flow));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const flow of pipes) flow();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
