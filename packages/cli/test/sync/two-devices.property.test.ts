/**
 * Two devices, one account, one real server: random operation sequences on both sides
 * (create, modify, delete, rename, mkdir, chmod, symlink, directory removal; edits on both
 * sides between syncs, and passes of both devices at the same time), then a few settling
 * passes. Proves that both directories end identical (every file, link and directory, empty
 * ones included; kind, content, link target, mode) and that no content ever present at a sync point is lost unless a user
 * deleted or overwrote it. `SYNC_RUNS=N` runs more cases (default 25).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import fc from "fast-check";
import { type Device, makeDevice, snapshotTree } from "./support.ts";

const RUNS = Number(process.env.SYNC_RUNS ?? 25);
/** File names used by the operations; `d`, `d/e`, `g` and `k` are only ever directories. */
const FILES = ["a.txt", "b.bin", "d/c.txt", "d/e/f.txt", "g/h.txt"];
const DIRS = ["d/e", "g", "k", "d/empty"];
const MODES = [0o644, 0o755, 0o600];

type Op =
  | { t: "write"; dev: 0 | 1; path: string }
  | { t: "delete"; dev: 0 | 1; path: string }
  | { t: "rename"; dev: 0 | 1; from: string; to: string }
  | { t: "mkdir"; dev: 0 | 1; dir: string }
  | { t: "rmtree"; dev: 0 | 1; dir: string }
  | { t: "chmod"; dev: 0 | 1; path: string; mode: number }
  | { t: "symlink"; dev: 0 | 1; path: string }
  | { t: "sync"; dev: 0 | 1 }
  | { t: "syncBoth" };

const dev = fc.constantFrom<0 | 1>(0, 1);
const file = fc.constantFrom(...FILES);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant("write" as const), dev, path: file }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("delete" as const), dev, path: file }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("rename" as const), dev, from: file, to: file }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant("mkdir" as const), dev, dir: fc.constantFrom(...DIRS) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant("rmtree" as const), dev, dir: fc.constantFrom("d/e", "g") }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant("chmod" as const),
      dev,
      path: file,
      mode: fc.constantFrom(...MODES),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("symlink" as const), dev, path: file }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("sync" as const), dev }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("syncBoth" as const) }) },
);

let server: ServerProcess;
const work = mkdtempSync(join(tmpdir(), "esync-sync-prop-"));
beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** The content (file bytes or link target) at `abs`, or null when nothing (or a directory) is there. */
function contentAt(abs: string): string | null {
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (!st) return null;
  if (st.isSymbolicLink()) return readlinkSync(abs);
  if (st.isFile()) return readFileSync(abs, "latin1");
  return null;
}

/** Every content (files and link targets) under `root`. */
function contentsOf(root: string): Set<string> {
  const out = new Set<string>();
  for (const n of snapshotTree(root).values()) if (n.kind !== "dir" && n.data !== undefined) out.add(n.data);
  return out;
}

/** Files, links and directories of `root`, with kind, mode and content (or link target). */
function treeOf(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rel, n] of snapshotTree(root))
    out[rel] =
      n.kind === "dir" ? "dir" : `${n.kind}:${n.kind === "file" ? n.mode?.toString(8) : ""}:${n.data}`;
  return out;
}

let runNo = 0;
let runsDone = 0;

test(
  `two devices converge and lose nothing (${RUNS} runs)`,
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 28 }), async (ops) => {
        const n = ++runNo;
        const label = `prop-${n}`;
        const devices: Device[] = [
          await makeDevice("laptop", join(work, `${n}-a`), server.url, label),
          await makeDevice("desktop", join(work, `${n}-b`), server.url, label),
        ];
        for (const d of devices) mkdirSync(d.root, { recursive: true });
        let counter = 0;
        const observed = new Set<string>();
        const destroyed = new Set<string>();
        const syncDevice = async (i: 0 | 1) => {
          const d = devices[i] as Device;
          for (const c of contentsOf(d.root)) observed.add(c);
          const report = await d.sync();
          expect(report.failures).toEqual([]);
          return report;
        };
        const destroy = (abs: string) => {
          const c = contentAt(abs);
          if (c !== null) destroyed.add(c);
        };
        try {
          for (const op of ops) {
            if (op.t === "sync") {
              await syncDevice(op.dev);
              continue;
            }
            if (op.t === "syncBoth") {
              for (const d of devices) for (const c of contentsOf(d.root)) observed.add(c);
              const reports = await Promise.all(devices.map((d) => d.sync()));
              for (const r of reports) expect(r.failures).toEqual([]);
              continue;
            }
            const root = (devices[op.dev] as Device).root;
            const abs = (rel: string) => join(root, ...rel.split("/"));
            switch (op.t) {
              case "write": {
                const p = abs(op.path);
                destroy(p);
                rmSync(p, { force: true });
                mkdirSync(dirname(p), { recursive: true });
                writeFileSync(p, `v${++counter}-${op.dev}-${"x".repeat(counter % 7)}`);
                break;
              }
              case "delete":
                destroy(abs(op.path));
                rmSync(abs(op.path), { force: true });
                break;
              case "rename":
                if (
                  op.from !== op.to &&
                  contentAt(abs(op.from)) !== null &&
                  !lstatSync(abs(op.to), { throwIfNoEntry: false })
                ) {
                  mkdirSync(dirname(abs(op.to)), { recursive: true });
                  renameSync(abs(op.from), abs(op.to));
                }
                break;
              case "mkdir":
                mkdirSync(abs(op.dir), { recursive: true });
                break;
              case "rmtree":
                for (const [rel, node] of snapshotTree(root))
                  if (rel.startsWith(`${op.dir}/`) && node.kind !== "dir" && node.data !== undefined)
                    destroyed.add(node.data);
                rmSync(abs(op.dir), { recursive: true, force: true });
                break;
              case "chmod": {
                const st = lstatSync(abs(op.path), { throwIfNoEntry: false });
                if (st?.isFile()) chmodSync(abs(op.path), op.mode);
                break;
              }
              case "symlink": {
                const p = abs(op.path);
                if (!lstatSync(p, { throwIfNoEntry: false })) {
                  mkdirSync(dirname(p), { recursive: true });
                  symlinkSync(`t${++counter}-${op.dev}/target`, p);
                }
                break;
              }
            }
          }
          // Settle: A, B, A, B.
          for (const i of [0, 1, 0] as const) await syncDevice(i);
          expect((await syncDevice(1)).deferred).toEqual([]);
          const [a, b] = devices as [Device, Device];
          expect(treeOf(b.root)).toEqual(treeOf(a.root));
          // Empty directories live as folder entries: no marker file on the server, and every
          // empty directory is registered.
          const folderHash = a.identity.folder(label).folderHash;
          const stored: string[] = [];
          for await (const e of a.api.iterateState(a.identity.address, folderHash))
            stored.push(e.relative_path ?? "");
          expect(stored.filter((p) => p.split("/").at(-1) === ".esync-dir")).toEqual([]);
          const registered = new Set(
            (await a.api.listFolderEntries(a.identity.address, folderHash)).relative_paths,
          );
          const snap = snapshotTree(a.root);
          const emptyDirs = [...snap]
            .filter(([rel, n]) => n.kind === "dir" && ![...snap.keys()].some((p) => p.startsWith(`${rel}/`)))
            .map(([rel]) => rel);
          expect(emptyDirs.filter((d) => !registered.has(d))).toEqual([]);
          const final = contentsOf(a.root);
          const lost = [...observed].filter((c) => !destroyed.has(c) && !final.has(c));
          expect(lost).toEqual([]);
          runsDone++;
        } finally {
          for (const d of devices) rmSync(d.root, { recursive: true, force: true });
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    console.log(`two-device property: ${runsDone} runs passed`);
  },
  { timeout: Math.max(120_000, RUNS * 8_000) },
);
