/**
 * Encrypt throughput of the client (not a test; run with `bun test/client/encrypt-throughput.bench.ts [MiB]`).
 * Measures, on one file of random bytes (default 256 MiB): `encryptFileStream` alone (encrypt
 * only, output discarded), and `sealFile` (encrypt + BLAKE3 of ciphertext + salted hash + spill
 * to disk, what an upload does), each on this thread and on an `EncryptPool` of one worker per
 * core. Prints a table and one JSON line. Baseline: raw
 * `xchacha20poly1305` of @noble/ciphers over 256 KiB frames, measured in the same run.
 */
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { EncryptPool, encryptFileStream, forEachChunk, sealFile } from "../src/index.ts";

const mib = Number(process.argv[2] ?? 256);
const size = mib * 1024 * 1024;
const path = join(tmpdir(), `esync-bench-${process.pid}.bin`);
const key = crypto.getRandomValues(new Uint8Array(32));
const w = Bun.file(path).writer();
const block = crypto.getRandomValues(new Uint8Array(1 << 16));
for (let i = 0; i < size; i += block.byteLength) w.write(block);
await w.end();

async function time(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
}

const frame = crypto.getRandomValues(new Uint8Array(256 * 1024));
const rawFrames = Math.min(256, size / frame.byteLength);
const raw = await time(async () => {
  for (let i = 0; i < rawFrames; i++) xchacha20poly1305(key, new Uint8Array(24)).encrypt(frame);
});
const enc = await time(async () => {
  await forEachChunk(encryptFileStream(key, path).stream, () => {});
});
const seal = await time(async () => {
  const s = await sealFile(path, { key, ss58Address: "5x", spillPath: `${path}.blob` });
  await s.dispose();
});
const pool = new EncryptPool(navigator.hardwareConcurrency || 2);
const encPool = await time(async () => {
  await forEachChunk(encryptFileStream(key, path, { pool }).stream, () => {});
});
const sealPool = await time(async () => {
  const s = await sealFile(path, { key, ss58Address: "5x", spillPath: `${path}.blob`, pool });
  await s.dispose();
});
pool.close();
await rm(path, { force: true });

const MB = 1e6;
const rows = {
  "noble raw (baseline)": (rawFrames * frame.byteLength) / MB / raw,
  encryptFileStream: size / MB / enc,
  "sealFile (+hash +spill)": size / MB / seal,
  [`encryptFileStream, pool ${pool.size}`]: size / MB / encPool,
  [`sealFile, pool ${pool.size}`]: size / MB / sealPool,
};
console.log(`input ${mib} MiB`);
for (const [k, v] of Object.entries(rows)) console.log(`${k.padEnd(26)} ${v.toFixed(1).padStart(8)} MB/s`);
console.log(JSON.stringify({ mib, mbPerSec: rows }));
