/**
 * The import rules of the workspace (docs/design.md, "Packages and their imports"), checked on
 * every TypeScript file under packages/:
 *
 * 1. No import cycle among the files of `src/` (type-only imports count too: a cycle of types
 *    is still two modules that cannot be read apart).
 * 2. A package's `src/` imports only the packages below it: protocol ← client ← share-page,
 *    protocol ← server (which also serves share-page's built assets), client ← cli.
 *    Tests and benches may also import what their package's devDependencies declare.
 * 3. Every imported workspace package is declared in the importing package's package.json.
 *
 * Prints each violation and exits 1 when there is one; prints a summary and exits 0 otherwise.
 * Usage: bun scripts/check-imports.ts
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";

const ROOT = resolve(import.meta.dir, "..");
/** The workspace packages a package's `src/` may import. */
const LAYERS: Record<string, string[]> = {
  protocol: [],
  client: ["protocol"],
  "share-page": ["client", "protocol"],
  server: ["protocol", "share-page"],
  cli: ["client", "protocol"],
};
const SPECIFIER =
  /(?:^|[;\n}])\s*(?:import|export)\s+(?:type\s+)?(?:[^"'`;]*?\s+from\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const problems: string[] = [];
const graph = new Map<string, string[]>();
let files = 0;
let imports = 0;

/** Resolves `spec` imported by `file` to a repository-relative path, or null for a non-workspace module. */
function resolveSpecifier(file: string, spec: string): string | null {
  let target: string;
  if (spec.startsWith(".")) target = resolve(dirname(join(ROOT, file)), spec);
  else {
    const m = /^@esync\/([^/]+)\/(.+)$/.exec(spec);
    if (!m) return null;
    const [, pkg, rest] = m as unknown as [string, string, string];
    const top = rest.split("/")[0];
    target = join(
      ROOT,
      "packages",
      pkg,
      top === "test" || top === "bench" || rest === "package.json" ? "" : "src",
      rest,
    );
  }
  return relative(ROOT, target);
}

for (const pkg of Object.keys(LAYERS)) {
  const manifest = JSON.parse(
    readFileSync(join(ROOT, "packages", pkg, "package.json"), "utf8"),
  ) as PackageJson;
  const runtime = new Set(Object.keys(manifest.dependencies ?? {}));
  const dev = new Set(Object.keys(manifest.devDependencies ?? {}));
  for (const file of new Glob(`packages/${pkg}/**/*.ts`).scanSync({ cwd: ROOT })) {
    if (file.includes("/node_modules/")) continue;
    files++;
    const inSrc = file.startsWith(`packages/${pkg}/src/`);
    const text = readFileSync(join(ROOT, file), "utf8");
    const edges: string[] = [];
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = (m[1] ?? m[2]) as string;
      const target = resolveSpecifier(file, spec);
      if (target === null) continue;
      imports++;
      const other = /^packages\/([^/]+)\//.exec(target)?.[1];
      if (!other) {
        problems.push(`${file}: imports ${spec}, outside every package`);
        continue;
      }
      if (other !== pkg) {
        const name = `@esync/${other}`;
        if (!spec.startsWith("@esync/"))
          problems.push(`${file}: reaches into ${other} by a relative path (${spec})`);
        if (inSrc && !LAYERS[pkg]?.includes(other))
          problems.push(`${file}: src of ${pkg} imports ${other} (${spec}), against the layers`);
        else if (!runtime.has(name) && !(dev.has(name) && !inSrc))
          problems.push(`${file}: imports ${spec} but packages/${pkg}/package.json does not declare ${name}`);
      }
      if (!existsSync(join(ROOT, target))) problems.push(`${file}: imports ${spec}, which does not exist`);
      if (inSrc && target.includes("/src/")) edges.push(target);
    }
    if (inSrc) graph.set(file, edges);
  }
}

// Cycles: strongly connected components of more than one file (or a file importing itself).
let counter = 0;
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const cycles: string[][] = [];
function connect(v: string): void {
  index.set(v, counter);
  low.set(v, counter);
  counter++;
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!graph.has(w)) continue;
    if (!index.has(w)) {
      connect(w);
      low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
  }
  if (low.get(v) === index.get(v)) {
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  }
}
for (const v of graph.keys()) if (!index.has(v)) connect(v);
for (const c of cycles) problems.push(`import cycle of ${c.length} files: ${c.join(" → ")}`);

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`check-imports: ${problems.length} problem(s) in ${files} files`);
  process.exit(1);
}
console.log(`check-imports: ${files} files, ${imports} workspace imports, no cycle, no upward import`);
