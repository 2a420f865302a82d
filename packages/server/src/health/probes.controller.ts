/**
 * @module server/health/probes.controller
 * Unauthenticated probes for orchestrators (docs/protocol.md#health-probes); `GET /health` stays in
 * health.controller.ts as docs/protocol.md#sync-endpoints specifies it.
 * - `GET /healthz` (liveness): 200 `{"status":"ok"}`; nothing is checked.
 * - `GET /readyz` (readiness): 200 `{"status":"ready","checks":{"database":"ok","storage":"ok"}}`
 *   when the database and the blob store answer, else 503 `{"status":"not_ready","checks":{...}}`
 *   naming the failing one; 503 as well from the moment the process starts draining for shutdown.
 */

import { Liveness, Readiness } from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import type { Services } from "../services.ts";

/** The `/healthz` and `/readyz` routes. */
export function probesController(s: Services) {
  return new Elysia({ name: "probes" })
    .get("/healthz", () => Response.json({ status: "ok" }), {
      response: { 200: Liveness },
      detail: { tags: ["health"], summary: "Liveness: the process answers (no auth, nothing checked)" },
    })
    .get(
      "/readyz",
      async () => {
        const r = await s.readiness.report();
        return Response.json(
          { status: r.ready ? "ready" : "not_ready", checks: r.checks },
          { status: r.ready ? 200 : 503 },
        );
      },
      {
        response: { 200: Readiness, 503: Readiness },
        detail: {
          tags: ["health"],
          summary: "Readiness: database and blob store checked; 503 when one fails or while shutting down",
        },
      },
    );
}
