/**
 * @module server/health/health.controller
 * `GET /health` (docs/protocol.md#sync-endpoints), unauthenticated: `{status, version, capabilities}`.
 */

import { HealthInfo } from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import pkg from "../../package.json" with { type: "json" };
import type { Services } from "../services.ts";

/** Capabilities this server advertises. */
export const CAPABILITIES = [
  "upload",
  "upload_session",
  "get_state",
  "delete",
  "download",
  "range",
  "folders",
  "search_files",
  "browse",
];

/** The health route. */
export function healthController(_s: Services) {
  return new Elysia({ name: "health" }).get(
    "/health",
    () => Response.json({ status: "healthy", version: pkg.version, capabilities: CAPABILITIES }),
    {
      response: { 200: HealthInfo },
      detail: { tags: ["health"], summary: "Liveness and capabilities (no auth, no envelope)" },
    },
  );
}
