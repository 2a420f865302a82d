/**
 * A pipelined request that arrives while Bun.serve's handler of the previous request is still
 * running (docs/internals.md, "Pipelining"). Run: `bun docs/repro/bun-pipelining.ts`. One TCP
 * write carries `PUT /x` with a 1,024-byte body and then `GET /y`; the PUT handler reads its
 * body, then waits `delay` ms (esync's chunk PUT stores and commits for a few ms) before
 * answering. Seen on Bun 1.4.5: with no wait both answers come back; with any wait the
 * connection is closed and neither answer is sent, though the PUT handler ran to its end.
 */
import net from "node:net";

/** Sends the two pipelined requests; resolves with every byte the server sent before closing. */
async function pipelined(delay: number): Promise<string> {
  const server = Bun.serve({
    port: 0,
    async fetch(req) {
      if (req.method !== "PUT") return new Response("ok");
      let n = 0;
      for await (const piece of req.body ?? []) n += piece.byteLength;
      if (delay > 0) await Bun.sleep(delay);
      return Response.json({ n });
    },
  });
  const data = Buffer.concat([
    Buffer.from("PUT /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1024\r\n\r\n"),
    Buffer.alloc(1024, 0x41),
    Buffer.from("GET /y HTTP/1.1\r\nHost: a.test\r\n\r\n"),
  ]);
  const text = await new Promise<string>((resolve) => {
    let got = "";
    const socket = net.connect(server.port ?? 0, "127.0.0.1", () => socket.write(data));
    socket.on("data", (d) => {
      got += d.toString("latin1");
      if ((got.match(/HTTP\/1\.1 /g) ?? []).length === 2) socket.destroy();
    });
    socket.on("close", () => resolve(got));
    setTimeout(() => socket.destroy(), 2000);
  });
  server.stop(true);
  return text;
}

console.log(`Bun ${Bun.version}\n`);
console.log("| PUT handler waits after its body | answers received |");
console.log("|---:|---|");
for (const delay of [0, 1, 20]) {
  const statuses = (await pipelined(delay)).match(/HTTP\/1\.1 \d{3}/g) ?? [];
  console.log(`| ${delay} ms | ${statuses.length ? statuses.join(", ") : "none (connection closed)"} |`);
}
