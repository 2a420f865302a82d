/**
 * @module server/workers/sweeper
 * Background collection: finalize leases that ran out, expired upload sessions (docs/protocol.md#upload-sessions), write
 * intents of dead processes, every `SHARE_REAP_INTERVAL_SECONDS` the revoked, expired and idle
 * shares (docs/sharing.md), expired kept versions (docs/versions.md), and the blob deletion queue
 * (objects, prefixes, and the multipart uploads of `multipartTarget`s, which are aborted). Runs every `ESYNC_SWEEP_INTERVAL_SECONDS`; one pass at a time per
 * process; failures are retried with backoff. Every node runs one: deletion rows are claimed with
 * a lease (`claimDue`), so each object is deleted by one sweeper.
 */
import type { Services } from "../services.ts";
import { SHARE_REAP_INTERVAL_SECONDS } from "../shares/share-rules.ts";
import { isMultipart } from "../storage/blob-store.ts";
import { multipartTargetKey } from "../storage/layout.ts";
import { DELETION_CLAIM_LEASE_SECONDS } from "./deletion-queue.repository.ts";

/** Seconds before a failed deletion is retried: 10 s doubling per attempt, at most 1 h. */
function backoff(attempts: number): number {
  return Math.min(3600, 10 * 2 ** Math.min(attempts, 9));
}

/** Periodic sweeper of sessions and blobs. */
export class Sweeper {
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  /** When shares were last reaped, Unix seconds. */
  private sharesReapedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly s: Services) {}

  /**
   * One pass: collect expired sessions, reap shares when their interval has passed, remove
   * expired kept versions (their blobs go to the deletion queue), then delete queued blobs that
   * are due.
   * @returns counts of sessions collected, shares (file and folder) reaped, kept versions
   *   expired and deletion rows processed.
   */
  async runOnce(): Promise<{ sessions: number; shares: number; versions: number; deletions: number }> {
    const { blobs, clock, log } = this.s.deps;
    const sessions = await this.s.sessions.sweepExpired();
    await this.releaseDeadIntents();
    let shares = 0;
    if (clock.now() - this.sharesReapedAt >= SHARE_REAP_INTERVAL_SECONDS) {
      this.sharesReapedAt = clock.now();
      shares = (await this.s.shares.reap()) + (await this.s.folderShares.reap());
    }
    const versions = await this.s.versions.expire();
    let deletions = 0;
    for (;;) {
      const now = clock.now();
      const due = await this.s.deletions.claimDue(now, 100, now + DELETION_CLAIM_LEASE_SECONDS);
      if (due.length === 0) break;
      await Promise.all(
        due.map(async (row) => {
          try {
            const uploadsOf = multipartTargetKey(row.target);
            if (uploadsOf !== null) {
              if (isMultipart(blobs)) await blobs.abortMultipart(uploadsOf);
            } else if (row.target.endsWith("/")) await blobs.deletePrefix(row.target);
            else await blobs.delete([row.target]);
            await this.s.deletions.done(row.id);
            deletions++;
          } catch (e) {
            log.warn("blob.delete_failed", {
              target: row.target,
              attempts: row.attempts + 1,
              error: e as Error,
            });
            await this.s.deletions.failed(
              row.id,
              clock.now() + backoff(row.attempts),
              String((e as Error)?.message ?? e),
            );
          }
        }),
      );
      if (due.length < 100) break;
    }
    if (deletions > 0) log.info("blob.deleted", { count: deletions });
    return { sessions, shares, versions, deletions };
  }

  /**
   * Makes the write intents of provably dead processes due now (a server killed mid-write and
   * restarted, or another node's process on this machine that died; see lease-holder.ts), so
   * that their objects are deleted in this pass instead of when the intents' leases end. A live
   * holder's intents, and those of a holder not provably dead (another machine), are left alone.
   */
  private async releaseDeadIntents(): Promise<void> {
    const { clock, log } = this.s.deps;
    for (const holder of await this.s.deletions.intentHolders(clock.now())) {
      if (!this.s.leaseHolders.isDead(holder)) continue;
      const count = await this.s.deletions.releaseHolder(holder, clock.now());
      if (count > 0) log.warn("blob.intent_holder_dead", { holder, count });
    }
  }

  /** Runs a pass unless one is running; resolves when it ends. */
  tick(): Promise<void> {
    const metrics = this.s.deps.metrics;
    this.running ??= this.runOnce()
      .then(() => void metrics?.sweeperRuns.inc({ outcome: "ok" }))
      .catch((e) => {
        metrics?.sweeperRuns.inc({ outcome: "failed" });
        this.s.deps.log.error("sweep.failed", { error: e as Error });
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  /** Starts the periodic sweep (first pass immediately, finishing sweeps a crash interrupted). */
  start(): void {
    if (this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.s.deps.config.sweepIntervalSeconds * 1000);
  }

  /** Stops the timer and waits for a running pass. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
