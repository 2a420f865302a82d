/**
 * The API client on the product endpoints (docs/protocol.md#delete-files, #rename-files, #quota, #summaries, #folder-entries, #capabilities) against a real server:
 * batch delete, signed batch rename, folder entries, can_upload, summaries, capabilities.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { verifyRenameSignature } from "@esync/protocol/rename.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import {
  ApiError,
  blake3Hex,
  buildManifest,
  EsyncApi,
  encryptBytes,
  identityFromMnemonic,
  pathHash,
  RENAME_DECLARATION_PREFIX,
  renameDeclaration,
  saltedHash,
  toHex,
  utf8,
  WalletTokenSource,
} from "../src/index.ts";

let server: ServerProcess;
let api: EsyncApi;
const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("ext");

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DEFAULT_QUOTA_BYTES: "1000000" } });
  api = new EsyncApi({ baseUrl: server.url, token: new WalletTokenSource(identity) });
  await api.registerFolder({ ss58Address: identity.address, folderHash: folder.folderHash, label: "ext" });
});
afterAll(async () => {
  await server?.stop();
});

async function put(rel: string, text: string) {
  const plain = utf8(text);
  const blob = encryptBytes(folder.key, plain);
  const m = buildManifest(
    {
      ss58Address: identity.address,
      folderHash: folder.folderHash,
      ciphertextHash: blake3Hex(blob),
      sizeBytes: plain.byteLength,
      saltedHash: saltedHash(identity.address, plain),
      relativePath: rel,
    },
    folder,
  );
  return api.upload(m, blob);
}

const who = () => ({ ss58Address: identity.address, folderHash: folder.folderHash });

describe("rename declaration", () => {
  test("the client's declaration of the spec example is the 398-byte text, sorted by old_path_hash", () => {
    const text = renameDeclaration([
      { oldPathHash: new Uint8Array(32).fill(0x11), newPathHash: new Uint8Array(32).fill(0x22) },
      { oldPathHash: new Uint8Array(32).fill(0x05), newPathHash: new Uint8Array(32).fill(0x06) },
    ]);
    expect(utf8(text).byteLength).toBe(398);
    expect(text).toBe(
      `${RENAME_DECLARATION_PREFIX}${"05".repeat(32)}:${"06".repeat(32)},${"11".repeat(32)}:${"22".repeat(32)}`,
    );
    expect(RENAME_DECLARATION_PREFIX.endsWith("Terms of Service: ")).toBe(true);
  });

  test("a folder key's signature of the declaration verifies with the server's verifier", () => {
    const pairs = [
      { oldPathHash: pathHash("b.txt"), newPathHash: pathHash("c.txt") },
      { oldPathHash: pathHash("a.txt"), newPathHash: pathHash("d.txt") },
    ];
    const sig = folder.sign(utf8(renameDeclaration(pairs)));
    expect(verifyRenameSignature(pairs, sig, folder.signingKey)).toBe(true);
    expect(verifyRenameSignature(pairs.slice(0, 1), sig, folder.signingKey)).toBe(false);
  });
});

describe("batch operations", () => {
  test("deleteFiles removes several files in one call and reports already_deleted for a repeat", async () => {
    await put("del/a.txt", "a");
    await put("del/b.txt", "b");
    const ids = [toHex(pathHash("del/a.txt")), toHex(pathHash("del/b.txt"))];
    const r = await api.deleteFiles({ ...who(), fileIds: ids });
    expect(r.files_deleted).toBe(2);
    expect(r.errors).toEqual([]);
    const again = await api.deleteFiles({ ...who(), fileIds: ids.slice(0, 1) });
    expect(again.files_deleted).toBe(0);
    expect(again.deleted?.[0]?.status).toBe("already_deleted");
  });

  test("deleteFiles of 1001 ids is ApiError 400 batch_too_large", async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => blake3Hex(String(i)));
    const e = await api.deleteFiles({ ...who(), fileIds: ids }).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(400);
    expect(e.code).toBe("batch_too_large");
  });

  test("renameFiles moves a file (signed batch) and reports a stale entry as revision_mismatch", async () => {
    const up = await put("ren/old.txt", "moving");
    await put("ren/other.txt", "other");
    const r = await api.renameFiles({
      ...who(),
      signer: folder,
      renames: [
        {
          oldPathHash: pathHash("ren/old.txt"),
          newPathHash: pathHash("ren/new.txt"),
          baseRevisionId: Uint8Array.from(up.revision_id),
          newFileName: "new.txt",
          newRelativePath: "ren/new.txt",
        },
        {
          oldPathHash: pathHash("ren/other.txt"),
          newPathHash: pathHash("ren/other2.txt"),
          baseRevisionId: new Uint8Array(32),
          newRelativePath: "ren/other2.txt",
        },
      ],
    });
    expect(r.renamed_count).toBe(1);
    expect(toHex(r.successes[0]?.new_path_hash ?? [])).toBe(toHex(pathHash("ren/new.txt")));
    expect(r.successes[0]?.new_revision_seq).toBe(2);
    expect(r.failures).toEqual([
      { old_path_hash: Array.from(pathHash("ren/other.txt")), reason: "revision_mismatch" },
    ]);
    const names: string[] = [];
    for await (const f of api.iterateState(identity.address, folder.folderHash))
      names.push(f.relative_path ?? "");
    expect(names).toContain("ren/new.txt");
    expect(names).not.toContain("ren/old.txt");
  });

  test("renameFiles signed by another key is ApiError 400 invalid_manifest", async () => {
    const up = await put("ren/x.txt", "x");
    const other = identity.folder("someone-else");
    const e = await api
      .renameFiles({
        ...who(),
        signer: { signingKey: other.signingKey, sign: folder.sign },
        renames: [
          {
            oldPathHash: pathHash("ren/x.txt"),
            newPathHash: pathHash("ren/y.txt"),
            baseRevisionId: Uint8Array.from(up.revision_id),
          },
        ],
      })
      .catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(400);
    expect(e.code).toBe("invalid_manifest");
  });
});

describe("folder entries", () => {
  test("register, list and unregister directory entries", async () => {
    const reg = await api.registerFolderEntries({ ...who(), relativePaths: ["Work", "Work/Empty"] });
    expect(reg).toEqual({ status: "registered", count: 2 });
    expect((await api.listFolderEntries(identity.address, folder.folderHash)).relative_paths.sort()).toEqual([
      "Work",
      "Work/Empty",
    ]);
    const un = await api.unregisterFolderEntries({ ...who(), relativePaths: ["Work/Empty"] });
    expect(un).toEqual({ status: "unregistered", count: 1 });
    expect((await api.listFolderEntries(identity.address, folder.folderHash)).relative_paths).toEqual([
      "Work",
    ]);
  });

  test("an invalid entry path is ApiError 400 invalid_manifest", async () => {
    const e = await api.registerFolderEntries({ ...who(), relativePaths: ["a/../b"] }).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe("invalid_manifest");
  });
});

describe("quota, summaries, capabilities", () => {
  test("canUpload answers the flat verdict against the allowance", async () => {
    expect(await api.canUpload({ ...who(), sizeBytes: 10 })).toEqual({ result: true, error: null });
    expect(await api.canUpload({ ...who(), sizeBytes: 2_000_000 })).toEqual({
      result: false,
      error: "drive_quota_exceeded",
    });
  });

  test("the three summaries read the account and one folder", async () => {
    await put("sum/photo.png", "png!");
    let user = await api.userSummary(identity.address);
    for (let i = 0; i < 40 && user.file_count === 0; i++) {
      await Bun.sleep(100);
      user = await api.userSummary(identity.address);
    }
    expect(user.ss58_address).toBe(identity.address);
    expect(user.file_count).toBeGreaterThan(0);
    const types = await api.fileTypeSummary(identity.address, folder.folderHash);
    expect(types.image).toBeGreaterThanOrEqual(1);
    expect(types.image_bytes).toBeGreaterThanOrEqual(4);
    const sources = await api.sourceSummary(identity.address);
    expect(sources.console + sources.desktop + sources.mobile + sources.other).toBeGreaterThan(0);
  });

  test("capabilities reads every flag; a server without the route reads as all false", async () => {
    const caps = await api.capabilities();
    expect(Object.keys(caps).sort()).toContain("folder_grants");
    const old = new EsyncApi({
      baseUrl: server.url,
      fetch: (async () => new Response("no", { status: 404 })) as unknown as typeof fetch,
    });
    expect(Object.values(await old.capabilities()).every((v) => v === false)).toBe(true);
  });
});
