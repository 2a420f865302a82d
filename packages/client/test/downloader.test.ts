/** Downloads decrypt, verify size and salted_hash, and write atomically; tampering leaves nothing behind. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CiphertextError,
  downloadFile,
  EsyncApi,
  IntegrityError,
  identityFromMnemonic,
  type RemoteFileEntry,
  uploadFile,
} from "../src/index.ts";
import { FakeServer } from "./fake-server.ts";

const dir = await mkdtemp(join(tmpdir(), "esync-down-"));
const server = new FakeServer().start();
afterAll(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});
const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("down");
const api = new EsyncApi({ baseUrl: server.url, token: identity.address });

async function uploaded(name: string, size: number): Promise<{ data: Uint8Array; entry: RemoteFileEntry }> {
  const data = crypto.getRandomValues(new Uint8Array(size));
  const path = join(dir, `src-${name}`);
  await Bun.write(path, data);
  await uploadFile({
    api,
    ss58Address: identity.address,
    folder,
    localPath: path,
    relativePath: name,
  });
  const page = await api.getState(identity.address, folder.folderHash);
  const entry = page.files.find((f) => f.relative_path === name);
  if (!entry) throw new Error("not listed");
  return { data, entry };
}

describe("downloadFile", () => {
  test("writes the decrypted file at the destination, creating parent directories", async () => {
    const { data, entry } = await uploaded("a.bin", 600_000);
    const dest = join(dir, "out/deep/a.bin");
    const seen: number[] = [];
    const out = await downloadFile({
      api,
      ss58Address: identity.address,
      folder,
      entry,
      destPath: dest,
      onProgress: (n) => seen.push(n),
    });
    expect(out.bytes).toBe(600_000);
    expect(out.revisionSeq).toBe(1);
    expect(Buffer.compare(await Bun.file(dest).bytes(), data)).toBe(0);
    expect(seen.at(-1)).toBe(out.ciphertextBytes);
  });

  test("a flipped bit on the server is rejected and leaves neither the file nor a partial file", async () => {
    const { entry } = await uploaded("b.bin", 300_000);
    const stored = [...server.files.values()].find((f) => f.manifest.relative_path === "b.bin");
    if (!stored) throw new Error("not stored");
    stored.blob[stored.blob.byteLength - 3] = (stored.blob[stored.blob.byteLength - 3] as number) ^ 0x80;
    const dest = join(dir, "out2/b.bin");
    const e = await downloadFile({ api, ss58Address: identity.address, folder, entry, destPath: dest }).catch(
      (x) => x,
    );
    expect(e).toBeInstanceOf(CiphertextError);
    expect(await readdir(join(dir, "out2"))).toEqual([]);
  });

  test("a salted_hash other than the listing's is an IntegrityError", async () => {
    const { entry } = await uploaded("c.bin", 1000);
    const forged = { ...entry, salted_hash: entry.salted_hash.map((b, i) => (i === 0 ? b ^ 1 : b)) };
    const dest = join(dir, "out3/c.bin");
    const e = await downloadFile({
      api,
      ss58Address: identity.address,
      folder,
      entry: forged,
      destPath: dest,
    }).catch((x) => x);
    expect(e).toBeInstanceOf(IntegrityError);
    expect(await Bun.file(dest).exists()).toBe(false);
  });

  test("a listing size other than the blob's is rejected", async () => {
    const { entry } = await uploaded("d.bin", 1000);
    const e = await downloadFile({
      api,
      ss58Address: identity.address,
      folder,
      entry: { ...entry, size_bytes: 999 },
      destPath: join(dir, "out4/d.bin"),
    }).catch((x) => x);
    expect(e).toBeInstanceOf(CiphertextError);
    expect(e.reason).toBe("size_mismatch");
  });
});
