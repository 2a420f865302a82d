/**
 * `bun run token create`: a lifetime of zero would issue a token that is already expired, so the
 * command refuses it (exit 2, nothing stored); a positive lifetime still works.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newUser } from "../support/fixtures.ts";

const dir = mkdtempSync(join(tmpdir(), "esync-token-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function token(...args: string[]) {
  return Bun.spawnSync(["bun", "run", join(import.meta.dir, "../../src/admin/token.ts"), ...args], {
    env: { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: join(dir, "db.sqlite") },
    stdout: "pipe",
    stderr: "pipe",
  });
}

describe("token create --expires-in", () => {
  test("refuses --expires-in 0 (and 0d) with exit 2 and issues nothing", () => {
    const owner = newUser().address;
    for (const v of ["0", "0d"]) {
      const r = token("create", "--owner", owner, "--expires-in", v);
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr.toString()).toMatch(/at least 1 second/);
    }
    const list = token("list", "--owner", owner, "--json");
    expect(list.exitCode).toBe(0);
    expect(JSON.parse(list.stdout.toString())).toEqual([]);
  });

  test("issues a token for --expires-in 15m that expires 900 s after now", () => {
    const owner = newUser().address;
    const r = token("create", "--owner", owner, "--expires-in", "15m", "--json");
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout.toString()) as { expires_at: number };
    expect(Math.abs(out.expires_at - (Math.floor(Date.now() / 1000) + 900))).toBeLessThanOrEqual(2);
  });
});
