/**
 * @module server/metrics/metrics.controller
 * `GET /metrics`: the Prometheus text exposition of `Metrics`. Mounted on the public app only when
 * no separate metrics port is configured (`ESYNC_METRICS_PORT`; see `serveMetrics`).
 */
import { Elysia, t } from "elysia";
import type { Metrics } from "./metrics.ts";

/** A `GET /metrics` response rendering `metrics`. */
export async function metricsResponse(metrics: Metrics): Promise<Response> {
  return new Response(await metrics.render(), { headers: { "content-type": metrics.contentType } });
}

/** The `/metrics` route on the public app. */
export function metricsController(metrics: Metrics) {
  return new Elysia({ name: "metrics" }).get("/metrics", () => metricsResponse(metrics), {
    response: { 200: t.String({ description: "Prometheus text exposition format" }) },
    detail: { tags: ["operations"], summary: "Prometheus metrics (text exposition format)" },
  });
}

/**
 * Serves `GET /metrics` alone on `host:port` (every other path is 404), so that the metrics are
 * not exposed on the public port.
 * @returns the listening server; `stop()` it at shutdown.
 */
export function serveMetrics(metrics: Metrics, host: string, port: number) {
  return Bun.serve({
    hostname: host,
    port,
    fetch: (req) =>
      new URL(req.url).pathname === "/metrics" && (req.method === "GET" || req.method === "HEAD")
        ? metricsResponse(metrics)
        : new Response("not found\n", { status: 404 }),
  });
}
