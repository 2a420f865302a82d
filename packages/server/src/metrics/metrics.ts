/**
 * @module server/metrics/metrics
 * Every Prometheus instrument of esync on one `prom-client` registry. A `Metrics` instance is
 * created by `src/server.ts` (or a test) and passed in through `AppDeps`; nothing here is a
 * process-wide singleton, so each test app scrapes its own numbers.
 *
 * Label values are bounded: HTTP routes are Elysia route templates
 * (`/upload/session/:session_id/chunk/:chunk_index`), statuses are classes (`2xx`), outcomes and
 * plans come from small fixed sets. No user, session, file or path ever becomes a label value.
 * Names and units follow Prometheus conventions (`_seconds`, `_bytes`, `_total`); the list with
 * their meaning is in docs/operator-guide.md#metrics.
 */

import { blake3BytesHashed } from "@esync/protocol/blake3.ts";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Buckets of request and operation latencies, seconds (1 ms to 2 min). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What `Metrics` reads from the database on every scrape. */
export interface MetricsStateSource {
  /** Number of stored upload sessions per state (`receiving`, `finalizing`, `finalized`). */
  sessionsByState(): Promise<Record<string, number>>;
  /** Rows of the blob deletion queue, and seconds since the oldest due row became due (0 when none). */
  deletionQueue(): Promise<{ depth: number; oldestDueAgeSeconds: number }>;
}

/** The instruments, and the registry `GET /metrics` renders. */
export class Metrics {
  readonly registry: Registry;
  /** HTTP requests by method, route template and status class. */
  readonly httpRequests: Counter<"method" | "route" | "status_class">;
  /** HTTP request duration until the response head, seconds. */
  readonly httpDuration: Histogram<"method" | "route" | "status_class">;
  /** Request body bytes received (declared by `Content-Length`). */
  readonly httpReceivedBytes: Counter;
  /** Response body bytes sent. */
  readonly httpSentBytes: Counter;
  /** Chunk PUT duration, seconds, by outcome (`ok`, `client_error`, `server_error`). */
  readonly chunkPutDuration: Histogram<"outcome">;
  /** Finalize duration, seconds, by hashing path and outcome. */
  readonly finalizeDuration: Histogram<"path" | "outcome">;
  /** Single-shot `/upload` duration, seconds, by outcome. */
  readonly singleUploadDuration: Histogram<"outcome">;
  /** Download duration until the last byte is handed to the socket, seconds, by outcome. */
  readonly downloadDuration: Histogram<"outcome">;
  /** Blob store operations by backend, operation and outcome, seconds. */
  readonly blobOps: Histogram<"backend" | "op" | "outcome">;
  /** Bytes stored by successful blob store `put`s, by backend. */
  readonly blobPutBytes: Counter<"backend">;
  /** Sweeper passes by outcome (`ok`, `failed`). */
  readonly sweeperRuns: Counter<"outcome">;
  /** Search duration by the counting plan chosen, seconds. */
  readonly searchDuration: Histogram<"plan">;
  /** Failed authentications by reason. */
  readonly authFailures: Counter<"reason">;
  private source: MetricsStateSource | null = null;

  /**
   * A fresh registry with every instrument and prom-client's default process metrics.
   * @param opts.defaultMetrics collect the process metrics (default true).
   */
  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registry = new Registry();
    this.registry = registry;
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
    const registers = [registry];
    this.httpRequests = new Counter({
      name: "esync_http_requests_total",
      help: "HTTP requests by method, route template and status class",
      labelNames: ["method", "route", "status_class"] as const,
      registers,
    });
    this.httpDuration = new Histogram({
      name: "esync_http_request_duration_seconds",
      help: "HTTP request duration until the response head is ready, by method, route template and status class",
      labelNames: ["method", "route", "status_class"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.httpReceivedBytes = new Counter({
      name: "esync_http_received_bytes_total",
      help: "Request body bytes received (as declared by Content-Length)",
      registers,
    });
    this.httpSentBytes = new Counter({
      name: "esync_http_sent_bytes_total",
      help: "Response body bytes sent",
      registers,
    });
    this.chunkPutDuration = new Histogram({
      name: "esync_chunk_put_duration_seconds",
      help: "Chunk PUT duration by outcome (ok, client_error, server_error)",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.finalizeDuration = new Histogram({
      name: "esync_finalize_duration_seconds",
      help: "Finalize duration by hashing path (running_hash, partial_read, full_pass) and outcome (ok, hash_mismatch, storage_error)",
      labelNames: ["path", "outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.singleUploadDuration = new Histogram({
      name: "esync_single_upload_duration_seconds",
      help: "Single-shot /upload duration by outcome (ok, client_error, server_error)",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.downloadDuration = new Histogram({
      name: "esync_download_duration_seconds",
      help: "Download duration until the last body byte, by outcome (ok, aborted, client_error, server_error)",
      labelNames: ["outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.blobOps = new Histogram({
      name: "esync_blob_operation_duration_seconds",
      help: "Blob store operations by backend (disk, s3), operation and outcome (ok, not_found, error)",
      labelNames: ["backend", "op", "outcome"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.blobPutBytes = new Counter({
      name: "esync_blob_put_bytes_total",
      help: "Bytes stored by successful blob store puts, by backend",
      labelNames: ["backend"] as const,
      registers,
    });
    this.sweeperRuns = new Counter({
      name: "esync_sweeper_runs_total",
      help: "Background sweeper passes by outcome (ok, failed)",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.searchDuration = new Histogram({
      name: "esync_search_duration_seconds",
      help: "Search duration by the counting plan chosen",
      labelNames: ["plan"] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.authFailures = new Counter({
      name: "esync_auth_failures_total",
      help: "Failed authentications by reason",
      labelNames: ["reason"] as const,
      registers,
    });
    const hashedAtStart = blake3BytesHashed();
    const self = this;
    new Counter({
      name: "esync_blake3_hashed_bytes_total",
      help: "Bytes hashed with BLAKE3 (upload verification) since this registry was created",
      registers,
      collect() {
        this.reset();
        this.inc(blake3BytesHashed() - hashedAtStart);
      },
    });
    new Gauge({
      name: "esync_upload_sessions",
      help: "Stored upload sessions by state (read from the database on scrape)",
      labelNames: ["state"] as const,
      registers,
      async collect() {
        if (!self.source) return;
        const counts = await self.source.sessionsByState();
        this.reset();
        for (const state of ["receiving", "finalizing", "finalized"]) this.set({ state }, counts[state] ?? 0);
      },
    });
    // One query per scrape: the depth gauge (registered, so collected, first) starts the read and
    // the age gauge after it awaits the same one.
    let queue: ReturnType<MetricsStateSource["deletionQueue"]> | null = null;
    new Gauge({
      name: "esync_deletion_queue_depth",
      help: "Rows in the blob deletion queue (read from the database on scrape)",
      registers,
      async collect() {
        if (!self.source) return;
        queue = self.source.deletionQueue();
        this.set((await queue).depth);
      },
    });
    new Gauge({
      name: "esync_deletion_queue_oldest_due_age_seconds",
      help: "Seconds since the oldest due row of the deletion queue became due; 0 when none is due",
      registers,
      async collect() {
        if (!self.source) return;
        const q = await (queue ?? self.source.deletionQueue());
        queue = null;
        this.set(q.oldestDueAgeSeconds);
      },
    });
  }

  /** Sets where the scrape-time gauges (sessions by state, deletion queue) read from. */
  bindState(source: MetricsStateSource): void {
    this.source = source;
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` of `render()`'s output. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

/** `2xx`, `4xx`, ... of an HTTP status. */
export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** `ok`, `client_error` or `server_error` for an HTTP status. */
export function outcomeOf(status: number): "ok" | "client_error" | "server_error" {
  return status >= 500 ? "server_error" : status >= 400 ? "client_error" : "ok";
}
