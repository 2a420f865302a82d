/**
 * @module server/services
 * Builds every service from the injected clients (metadata store, blob store, clock, logger).
 * HTTP controllers and workers receive this object; nothing constructs its own clients.
 */
import { join } from "node:path";
import { AuthService } from "./auth/auth.service.ts";
import type { Config } from "./config/config.ts";
import { type ProfileRules, profileRules } from "./config/profile.ts";
import { searchIndexOf } from "./db/open.ts";
import type { MetadataStore } from "./db/store.ts";
import { DriveAccessService } from "./drives/drive-access.service.ts";
import { DrivesService } from "./drives/drives.service.ts";
import { FilesService } from "./files/files.service.ts";
import { SingleUploadService } from "./files/single-upload.ts";
import { FoldersService } from "./folders/folders.service.ts";
import { Readiness } from "./health/readiness.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import { InstrumentedBlobStore } from "./metrics/blob-store.ts";
import type { Metrics } from "./metrics/metrics.ts";
import { QuotaService } from "./quota/quota.service.ts";
import { BrowseService } from "./search/browse.service.ts";
import { DegradedStateLog, SearchService } from "./search/search.service.ts";
import type { SearchIndex } from "./search/search-index.ts";
import { LeaseHolders } from "./sessions/lease-holder.ts";
import { SessionEngine } from "./sessions/session.engine.ts";
import { FolderSharesService } from "./shares/folder-shares.service.ts";
import { FileSharesService } from "./shares/shares.service.ts";
import type { BlobStore } from "./storage/blob-store.ts";
import { SummariesService } from "./summaries/summaries.service.ts";
import type { Clock } from "./util/clock.ts";
import type { Logger } from "./util/log.ts";
import { VersionsService } from "./versions/versions.service.ts";
import type { DeletionQueueRepository } from "./workers/deletion-queue.repository.ts";

/** The clients a service instance is built on. */
export interface AppDeps {
  config: Config;
  /** The metadata database (`openMetadataStore`). */
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
  log: Logger;
  /** The metrics to record into (a fresh registry per app); absent: no metrics (`ESYNC_METRICS=off`). */
  metrics?: Metrics;
  /** The search backend; absent: the SQLite index of `db`. */
  searchIndex?: SearchIndex;
}

/** Every service of the app, wired. */
export interface Services {
  deps: AppDeps;
  /** The rules of the configured API profile (`ESYNC_API_PROFILE`). */
  profile: ProfileRules;
  auth: AuthService;
  folders: FoldersService;
  files: FilesService;
  sessions: SessionEngine;
  singleUpload: SingleUploadService;
  deletions: DeletionQueueRepository;
  /** This process as a lease holder, and which holders are provably dead (write intents, finalizes). */
  leaseHolders: LeaseHolders;
  search: SearchService;
  browse: BrowseService;
  readiness: Readiness;
  quota: QuotaService;
  summaries: SummariesService;
  /** Who may do what in an owner's folder (every file route asks it). */
  access: DriveAccessService;
  /** Shared-drive invites and membership. */
  drives: DrivesService;
  /** File shares (docs/sharing.md). */
  shares: FileSharesService;
  /** Folder shares (docs/sharing.md). */
  folderShares: FolderSharesService;
  /** Request counts of the anonymous share routes per client address. */
  shareLimiter: RateLimiter;
  /** Version history and trash (docs/versions.md). */
  versions: VersionsService;
}

/**
 * Wires repositories and services on `deps`. With `deps.metrics`, the blob store is wrapped in
 * `InstrumentedBlobStore` (so `Services.deps.blobs` is the timed one) and the services report to it.
 */
export function buildServices(appDeps: AppDeps): Services {
  const { metrics } = appDeps;
  const deps = metrics ? { ...appDeps, blobs: new InstrumentedBlobStore(appDeps.blobs, metrics) } : appDeps;
  const { config, store, blobs, clock, log } = deps;
  const { sessions: sessionsRepo, deletionQueue: deletions } = store.repos;
  metrics?.bindState({
    sessionsByState: () => sessionsRepo.countByState(),
    deletionQueue: () => deletions.stats(clock.now()),
  });
  const access = new DriveAccessService(store.repos.drives);
  const quota = new QuotaService(store.repos.quota, clock, config.defaultQuotaBytes);
  const files = new FilesService(
    store,
    blobs,
    clock,
    quota,
    config.blobGraceSeconds,
    access,
    config.versionRetentionSeconds,
  );
  const searchIndex = deps.searchIndex ?? searchIndexOf(store);
  const searchDegraded = new DegradedStateLog(log, searchIndex.kind);
  const profile = profileRules(config.apiProfile);
  // SQLite is a file on this machine: a holder of an earlier boot of it is dead.
  const leaseHolders = new LeaseHolders({ localDatabase: store.dialect === "sqlite" });
  return {
    deps,
    profile,
    auth: new AuthService(store.repos.apiTokens, clock, config.insecureSs58Tokens),
    folders: new FoldersService(store, clock, config.blobGraceSeconds, {
      upsert: profile.registerFolderUpsert,
    }),
    files,
    sessions: new SessionEngine(store, files, blobs, clock, log, {
      ttlSeconds: config.sessionTtlSeconds,
      onFinalize: (path, outcome, seconds) => metrics?.finalizeDuration.observe({ path, outcome }, seconds),
      maxSessionsPerUser: config.maxSessionsPerUser,
      maxChunkCount: config.maxChunkCount,
      lookaheadBytes: config.lookaheadBytes,
      slots: {
        maxPerAccount: config.maxInflightChunksPerUser,
        maxTotal: config.maxInflightChunks,
        fairFloor: config.inflightChunksFairFloor,
        graceMs: config.bodyRateGraceSeconds * 1000,
        minBytesPerSecond: config.bodyMinBytesPerSecond,
        maxBytes: config.maxInflightChunkBytes,
      },
      finalizeLeaseSeconds: config.finalizeLeaseSeconds,
      leaseHolders,
    }),
    singleUpload: new SingleUploadService(files, deletions, blobs, clock, log, {
      spoolDir: join(config.dataDir, "spool"),
      maxBytes: config.maxSingleUploadBytes,
      intentHolder: leaseHolders.self,
    }),
    deletions,
    leaseHolders,
    search: new SearchService(
      searchIndex,
      log,
      (plan, seconds) => metrics?.searchDuration.observe({ plan }, seconds),
      searchDegraded,
    ),
    browse: new BrowseService(searchIndex, store.repos.folderEntries, searchDegraded),
    readiness: new Readiness(store, blobs, log),
    quota,
    summaries: new SummariesService(store),
    access,
    drives: new DrivesService(store, clock),
    shares: new FileSharesService(store, blobs, clock, quota, log, {
      graceSeconds: config.blobGraceSeconds,
      logAddresses: config.shareLogAddresses,
    }),
    folderShares: new FolderSharesService(store, clock, searchIndex, log),
    shareLimiter: new RateLimiter(config.shareRateLimit, clock),
    versions: new VersionsService(store, clock, access, files, quota),
  };
}
