/**
 * @tus/server with its file store on Bun (node:http), the comparison of `bench/upload.ts
 * --compare`: the tus resumable-upload protocol as most sync services deploy it.
 *
 *   bun bench/servers/tus.ts <port> <dir>
 */
import http from "node:http";
import { FileStore } from "@tus/file-store";
import { Server } from "@tus/server";

const port = Number(process.argv[2]);
const dir = process.argv[3]!;
const tus = new Server({ path: "/files", datastore: new FileStore({ directory: dir }) });
const server = http.createServer({ requestTimeout: 0 }, (req, res) => tus.handle(req, res));
server.listen(port, "127.0.0.1", () => console.log("ready"));
// A clean exit on SIGTERM, so that a `--cpu-prof` profile is written.
process.on("SIGTERM", () => process.exit(0));
