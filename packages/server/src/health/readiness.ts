/**
 * @module server/health/readiness
 * Whether this process should receive new traffic (docs/protocol.md#health-probes): ready when the database
 * answers and the blob store is reachable, and not while it drains for shutdown.
 */
import type { MetadataStore } from "../db/store.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import type { Logger } from "../util/log.ts";

/** Result of one dependency check (the reason of an `error` goes to the log, not to the probe). */
export type CheckResult = "ok" | "error";

/** A readiness report: `ready` and the result of each check. */
export interface ReadinessReport {
  ready: boolean;
  /** `draining` is present (and `"shutting_down"`) only while the process drains. */
  checks: { database: CheckResult; storage: CheckResult; draining?: "shutting_down" };
}

/** Readiness of the process: dependency checks plus the draining flag set at shutdown. */
export class Readiness {
  private drainingSince: number | null = null;

  constructor(
    private readonly store: MetadataStore,
    private readonly blobs: BlobStore,
    private readonly log: Logger,
  ) {}

  /** Marks the process as draining: `/readyz` answers 503 from now on. */
  drain(): void {
    this.drainingSince ??= Date.now();
  }

  /** True once `drain()` was called. */
  get draining(): boolean {
    return this.drainingSince !== null;
  }

  /** Checks the database (a query) and the blob store (`check()`), unless draining. */
  async report(): Promise<ReadinessReport> {
    let database: CheckResult = "ok";
    try {
      await this.store.ping();
    } catch (e) {
      database = "error";
      this.log.warn("readiness.database_failed", { error: e as Error });
    }
    let storage: CheckResult = "ok";
    try {
      await this.blobs.check();
    } catch (e) {
      storage = "error";
      this.log.warn("readiness.storage_failed", { error: e as Error });
    }
    const checks: ReadinessReport["checks"] = { database, storage };
    if (this.draining) checks.draining = "shutting_down";
    return { ready: !this.draining && database === "ok" && storage === "ok", checks };
  }
}
