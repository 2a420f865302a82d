/**
 * @module cli/throttle
 * `--limit-rate`: an average upload bandwidth cap. Each chunk (or single-shot body) reserves
 * its bytes on a shared schedule and starts only when the schedule allows, so the average
 * rate stays at or under the cap while each request itself goes at full speed.
 */

import type { ApiClientOptions } from "@esync/client/api.ts";
import { EsyncApi } from "@esync/client/api.ts";
import type { ChunkStored, UploadResult } from "@esync/client/api-types.ts";
import { realSleep } from "@esync/client/retry.ts";
import type { WireManifest } from "@esync/protocol/manifest.ts";
import { type CommandContext, retryNotice } from "./context.ts";
import { parseSize, usageError } from "./output.ts";

/** A schedule of bytes at `bytesPerSec`. */
export class Throttle {
  private next = 0;

  constructor(readonly bytesPerSec: number) {
    if (!(bytesPerSec > 0)) throw new RangeError(`rate must be positive, got ${bytesPerSec}`);
  }

  /** Waits until `bytes` more may be sent without exceeding the average rate. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    const now = performance.now();
    const start = Math.max(now, this.next);
    this.next = start + (bytes / this.bytesPerSec) * 1000;
    if (start > now) await realSleep(start - now, signal);
  }
}

const sizeOf = (b: Blob | Uint8Array) => (b instanceof Blob ? b.size : b.byteLength);

/** An `EsyncApi` whose chunk and single-shot uploads share one `Throttle`. */
export class ThrottledApi extends EsyncApi {
  constructor(
    options: ApiClientOptions,
    private readonly throttle: Throttle,
  ) {
    super(options);
  }

  /** `putChunk`, started when the throttle allows. */
  override async putChunk(
    sessionId: string,
    index: number,
    chunk: Blob | Uint8Array,
    signal?: AbortSignal,
  ): Promise<ChunkStored> {
    await this.throttle.take(sizeOf(chunk), signal);
    return super.putChunk(sessionId, index, chunk, signal);
  }

  /** `upload`, started when the throttle allows. */
  override async upload(
    manifest: WireManifest,
    ciphertext: Blob | Uint8Array,
    signal?: AbortSignal,
  ): Promise<UploadResult> {
    await this.throttle.take(sizeOf(ciphertext), signal);
    return super.upload(manifest, ciphertext, signal);
  }
}

/**
 * `ctx` with an `api` whose uploads share one `Throttle` of `--limit-rate` `rate` (a size per
 * second, e.g. `20MiB`); `ctx` itself when `rate` is undefined. Usage error for 0 or a
 * value that is not a size.
 */
export function limitRate(ctx: CommandContext, rate: string | undefined): CommandContext {
  if (rate === undefined) return ctx;
  const bytesPerSec = parseSize(rate);
  if (bytesPerSec === 0) throw usageError("--limit-rate must be above 0");
  const api = new ThrottledApi(
    {
      baseUrl: ctx.serverUrl,
      token: ctx.tokens,
      retry: ctx.retry,
      onRetry: retryNotice(ctx.retry.forMs),
    },
    new Throttle(bytesPerSec),
  );
  return { ...ctx, api };
}
