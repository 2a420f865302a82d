/**
 * @module health/health.controller
 * `GET /health` (complement §5), unauthenticated: `{status, version, capabilities}`.
 */
import { Elysia, t } from "elysia";
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
      detail: {
        tags: ["health"],
        summary: "Liveness and capabilities (no auth)",
        responses: {
          "200": {
            description: "healthy",
            content: {
              "application/json": {
                schema: t.Object({
                  status: t.Literal("healthy"),
                  version: t.String(),
                  capabilities: t.Array(t.String()),
                }),
              },
            },
          },
        },
      } as never,
    },
  );
}
