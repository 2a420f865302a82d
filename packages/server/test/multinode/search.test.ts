/**
 * Search over three server processes on one metadata database (issue 11: "search answers
 * identically on every node"). Files written through every node are searched and browsed on every
 * node with the same queries: the answers must be equal field for field, right after writes and
 * deletes made on other nodes (no node may answer from state of its own that the others' writes
 * did not reach).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { makeManifest, newUser, type TestUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import { call, describeCluster, expectSuccess, FOLDER, UPLOAD_RESULT_KEYS, uploadSingle } from "./support.ts";

let cluster: Cluster;
let urls: string[] = [];

beforeAll(async () => {
  if (skipS3) return;
  cluster = await startCluster({ nodes: 3, label: "search" });
  urls = cluster.nodes.map((n) => n.url);
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

const NAMES = ["report", "Rapport", "photo", "holiday", "invoice", "notes", "été", "archive"];
const EXTS = [".pdf", ".jpg", ".png", ".txt", ".zip", ".md", ".mp4", ".ts"];

/** Search and browse queries every node must answer alike. */
const QUERIES = [
  "/search_files/{a}",
  "/search_files/{a}?q=rep",
  "/search_files/{a}?q=o&sort_by=file_name&sort_order=asc&limit=7&offset=3",
  "/search_files/{a}?file_type=image",
  "/search_files/{a}?file_type=pdf,.zip&sort_by=size_bytes",
  "/search_files/{a}?size_min=3000&size_max=6000&sort_by=size_bytes&sort_order=asc",
  "/search_files/{a}?q=%C3%A9t%C3%A9",
  "/search_files/{a}?q=x",
  `/browse/{a}/${FOLDER}`,
  `/browse/{a}/${FOLDER}?path=dir1&sort_by=file_name`,
];

/** Every query of QUERIES on every node: asserts 200 and equal bodies; returns node 0's bodies. */
async function sameEverywhere(user: TestUser): Promise<unknown[]> {
  const bodies: unknown[] = [];
  for (const q of QUERIES) {
    const path = q.replace("{a}", user.address);
    const answers = await Promise.all(urls.map((u) => call(u, user, "GET", path)));
    for (const a of answers) expect({ path, status: a.status }).toEqual({ path, status: 200 });
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[2]!.body).toEqual(answers[0]!.body);
    bodies.push(answers[0]!.body);
  }
  return bodies;
}

/** Uploads a small file at `path` through `base`; returns its path hash as hex. */
async function put(base: string, user: TestUser, path: string, size: number): Promise<string> {
  const ct = randomBytes(size);
  const manifest = makeManifest({ owner: user.address, ciphertext: ct, path });
  expectSuccess(await uploadSingle(base, user, manifest, ct), UPLOAD_RESULT_KEYS);
  return Buffer.from(manifest.path_hash as number[]).toString("hex");
}

describeCluster("search on three nodes", () => {
  test("search and browse answer identically on every node, also right after a write and a delete on other nodes", async () => {
    const user = newUser();
    const ids: string[] = [];
    for (let i = 0; i < 48; i++) {
      const name = `${NAMES[i % NAMES.length]}-${i}${EXTS[(i * 5) % EXTS.length]}`;
      ids.push(await put(urls[i % 3]!, user, `dir${i % 4}/${name}`, 1000 + 137 * i));
    }
    const before = await sameEverywhere(user);
    // Not a comparison of empty answers: every search query but the last two finds files.
    for (const body of before.slice(0, 6))
      expect((body as { Success: { files: unknown[] } }).Success.files.length).toBeGreaterThan(0);
    expect((before[0] as { Success: { total_count: number } }).Success.total_count).toBe(48);

    await put(urls[1]!, user, "dir1/report-new.pdf", 4242);
    const del = await call(urls[2]!, user, "POST", "/delete_files", {
      ss58_address: user.address,
      folder_hash: FOLDER,
      file_ids: [ids[0]!, ids[9]!],
    });
    expect(expectSuccess(del, ["deleted", "errors", "files_deleted"]).files_deleted).toBe(2);
    const after = await sameEverywhere(user);
    expect((after[0] as { Success: { total_count: number } }).Success.total_count).toBe(47);
    expect(after).not.toEqual(before);
    const names = (after[1] as { Success: { files: { file_name: string }[] } }).Success.files.map(
      (f) => f.file_name,
    );
    expect(names).toContain("report-new.pdf");
    expect(names).not.toContain("report-0.pdf");
  });
});
