/**
 * Packs the `esync` command into one npm tarball that installs without this repository and
 * without the server's dependencies:
 *
 *     bun scripts/pack-cli.ts                 # -> dist/esync-<version>.tgz (prints its path)
 *     bun install -g ./dist/esync-<version>.tgz
 *
 * `bun build` bundles the CLI with the client library and the protocol package into
 * `esync.js` (target Bun), plus the encryption worker as `encrypt-worker.js` beside it. The two
 * native modules (BLAKE3 and Argon2, prebuilt per platform) cannot be bundled; they stay
 * dependencies of the tarball, at the versions the client package declares. Prints the
 * tarball's size and the bundle's. Exit status 1 when the build or the pack fails.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const OUT = resolve(process.argv[2] ?? join(ROOT, "dist"));
const STAGE = join(OUT, "esync-cli");
/** Native packages the bundle loads at run time. */
const NATIVE = ["@napi-rs/blake-hash", "@node-rs/argon2"];

const cli = JSON.parse(readFileSync(join(ROOT, "packages/cli/package.json"), "utf8")) as {
  version: string;
  description: string;
};
const client = JSON.parse(readFileSync(join(ROOT, "packages/client/package.json"), "utf8")) as {
  dependencies: Record<string, string>;
};

rmSync(STAGE, { recursive: true, force: true });
mkdirSync(STAGE, { recursive: true });
const built = await Bun.build({
  entrypoints: [join(ROOT, "packages/cli/src/esync.ts"), join(ROOT, "packages/client/src/encrypt-worker.ts")],
  outdir: STAGE,
  target: "bun",
  naming: { entry: "[name].[ext]" },
  external: NATIVE,
});
if (!built.success) {
  for (const log of built.logs) console.error(log);
  process.exit(1);
}
const dependencies: Record<string, string> = {};
for (const name of NATIVE) {
  const version = client.dependencies[name];
  if (!version) throw new Error(`packages/client/package.json does not declare ${name}`);
  dependencies[name] = version;
}
writeFileSync(
  join(STAGE, "package.json"),
  `${JSON.stringify(
    {
      name: "esync",
      version: cli.version,
      description: cli.description,
      type: "module",
      bin: { esync: "esync.js" },
      files: ["esync.js", "encrypt-worker.js"],
      engines: { bun: ">=1.3" },
      dependencies,
    },
    null,
    2,
  )}\n`,
);
const pack = Bun.spawnSync([process.execPath, "pm", "pack", "--destination", OUT, "--quiet"], {
  cwd: STAGE,
  stdout: "pipe",
  stderr: "pipe",
});
if (pack.exitCode !== 0) {
  console.error(pack.stderr.toString());
  process.exit(1);
}
const tarball = join(OUT, `esync-${cli.version}.tgz`);
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
console.log(
  `${tarball} (${kib(statSync(tarball).size)}; bundle ${kib(statSync(join(STAGE, "esync.js")).size)})`,
);
