/**
 * Deeply nested JSON bodies (`{"a":` × N, `1`, `}` × N, and the same with arrays) sent to JSON
 * routes of the real server: every one is answered 400 `invalid_manifest` within 1 s, whatever
 * its depth, and a `/health` probe running all along never waits 250 ms or more
 * (docs/operator-guide.md#json-nesting-limit).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { newUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { reportFigure } from "./support.ts";

const DEPTHS = [5_000, 20_000, 50_000];
const ROUTES = ["/upload/session", "/rename_files", "/register_folder"];
const ANSWER_LIMIT_MS = 1000;
const HEALTH_LIMIT_MS = 250;

let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** `{"a":{"a":…1…}}` (objects) or `[[…1…]]` (arrays) nested `depth` deep. */
function nested(depth: number, kind: "object" | "array"): string {
  return kind === "object"
    ? `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`
    : `${"[".repeat(depth)}1${"]".repeat(depth)}`;
}

test("nested JSON of any depth is answered 400 invalid_manifest within 1 s and /health never waits 250 ms", async () => {
  const user = newUser();
  // Warm-up: the first request of each route compiles its handlers and validators.
  for (const route of ROUTES)
    for (const body of ["{}", `{"manifest":${nested(3, "object")}}`]) {
      const r = await fetch(`${server.url}${route}`, {
        method: "POST",
        headers: { authorization: user.auth, "content-type": "application/json" },
        body,
      });
      await r.arrayBuffer();
    }
  let probing = true;
  const health: number[] = [];
  const probe = (async () => {
    while (probing) {
      const t0 = performance.now();
      try {
        const r = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(30_000) });
        await r.arrayBuffer();
      } catch {
        // counted by its time
      }
      health.push(performance.now() - t0);
      await Bun.sleep(20);
    }
  })();
  const answers: { route: string; depth: number; kind: string; status: number; code: string; ms: number }[] =
    [];
  try {
    await Bun.sleep(200);
    for (const depth of DEPTHS)
      for (const route of ROUTES)
        for (const kind of ["object", "array"] as const) {
          // Wrapped in a legitimate-looking field so the top level is an object.
          const body = `{"manifest":${nested(depth, kind)}}`;
          const t0 = performance.now();
          let status = 0;
          let code = "";
          try {
            const r = await fetch(`${server.url}${route}`, {
              method: "POST",
              headers: { authorization: user.auth, "content-type": "application/json" },
              body,
              signal: AbortSignal.timeout(30_000),
            });
            status = r.status;
            const json = (await r.json().catch(() => null)) as {
              Error?: { error?: string };
              error?: string;
            } | null;
            code = json?.Error?.error ?? json?.error ?? "";
          } catch (e) {
            code = (e as Error).name;
          }
          answers.push({ route, depth, kind, status, code, ms: performance.now() - t0 });
        }
    await Bun.sleep(200);
  } finally {
    probing = false;
    await probe;
  }
  const slowest = Math.round(Math.max(...answers.map((a) => a.ms)));
  const healthMax = Math.round(Math.max(...health));
  reportFigure("nested_json_max_depth_sent", Math.max(...DEPTHS));
  reportFigure("nested_json_slowest_answer_ms", slowest);
  reportFigure("nested_json_statuses", [...new Set(answers.map((a) => `${a.status} ${a.code}`))].join(", "));
  reportFigure("nested_json_health_max_ms", healthMax);
  reportFigure("nested_json_health_probes", health.length);
  for (const a of answers) {
    expect({ ...a, ms: 0 }).toEqual({ ...a, ms: 0, status: 400, code: "invalid_manifest" });
    expect(a.ms).toBeLessThan(ANSWER_LIMIT_MS);
  }
  expect(healthMax).toBeLessThan(HEALTH_LIMIT_MS);
}, 600_000);
