/**
 * @module server/app
 * `createApp(deps)` wires services, controllers (one Elysia plugin per feature), the OpenAPI page
 * and the single error handler that turns every failure into the spec's envelope (docs/protocol.md#errors);
 * failed schema validations become error codes through `validationFailure`.
 * Tests build it on an in-memory database and a temporary blob directory and call `handle`
 * (`app.handle` with request ids, the access log and HTTP metrics: src/http/instrument.ts).
 */

import { AppError, fail, isOutOfSpace, storageFailure } from "@esync/protocol/errors.ts";
import { randomHex } from "@esync/protocol/ids.ts";
import { DrizzleError, DrizzleQueryError } from "drizzle-orm";
import { Elysia, ValidationError } from "elysia";
import { authFailureReason } from "./auth/auth.service.ts";
import { capabilitiesController } from "./capabilities/capabilities.controller.ts";
import { drivePreviewController, drivesController } from "./drives/drives.controller.ts";
import { batchController } from "./files/batch.controller.ts";
import { filesController } from "./files/files.controller.ts";
import { foldersController } from "./folders/folders.controller.ts";
import { healthController } from "./health/health.controller.ts";
import { probesController } from "./health/probes.controller.ts";
import { errorResponse, inV1Space, unmountedResponse } from "./http/envelope.ts";
import { answerHead } from "./http/head.ts";
import { instrumentHandle, redactedUrl, routeTemplatePlugin } from "./http/instrument.ts";
import { openApi } from "./http/openapi.ts";
import { validationFailure } from "./http/validate.ts";
import { metricsController } from "./metrics/metrics.controller.ts";
import { quotaController } from "./quota/quota.controller.ts";
import { searchController } from "./search/search.controller.ts";
import { type AppDeps, buildServices, type Services } from "./services.ts";
import { sessionsController } from "./sessions/sessions.controller.ts";
import { sharePageController } from "./share-page/share-page.controller.ts";
import { folderSharesController } from "./shares/folder-shares.controller.ts";
import { sharesController } from "./shares/shares.controller.ts";
import { BlobNotFoundError, BlobReadError } from "./storage/blob-store.ts";
import { summariesController } from "./summaries/summaries.controller.ts";
import { currentRequest } from "./util/request-context.ts";
import { versionsController } from "./versions/versions.controller.ts";

/** System error codes of file and network I/O: a failing blob store, not the database. */
const IO_ERROR_CODES = new Set([
  "ENOENT",
  "EIO",
  "ENOSPC",
  "EACCES",
  "EROFS",
  "EMFILE",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
]);

/**
 * True when `e` comes from the blob store (missing object, S3 error, file or network I/O);
 * database errors (`SQLiteError`, Drizzle's query errors) and anything else are not.
 */
export function isStorageError(e: unknown): boolean {
  if (e instanceof BlobNotFoundError) return true;
  if (!(e instanceof Error)) return false;
  if (e.name === "SQLiteError" || e instanceof DrizzleError || e instanceof DrizzleQueryError) return false;
  const code = (e as { code?: unknown }).code;
  return e.name === "S3Error" || (typeof code === "string" && IO_ERROR_CODES.has(code));
}

/** Maps any thrown value to an `AppError`; unknown ones are logged with `requestId`. */
export function toAppError(
  e: unknown,
  code: string | number,
  s: Services,
  request: Request,
  requestId: string,
): AppError {
  if (e instanceof AppError) return e;
  switch (code) {
    case "NOT_FOUND":
      return fail("not_found", `No route for ${request.method} ${new URL(request.url).pathname}`);
    case "PARSE":
      // A parse hook's own error (401 before the body is read, or readJson's 400) comes as the cause.
      if ((e as Error).cause instanceof AppError) return (e as Error).cause as AppError;
      return fail("invalid_manifest", "The request body could not be parsed");
    case "VALIDATION":
      if (e instanceof ValidationError) return validationFailure(e);
      return fail("invalid_parameter", "A request parameter is invalid");
    case "INVALID_COOKIE_SIGNATURE":
      return fail("invalid_parameter", "A request parameter is invalid");
  }
  const err = e as Error;
  s.deps.log.error("request.failed", {
    request_id: requestId,
    method: request.method,
    url: redactedUrl(request.url),
    error: err,
  });
  // The database's disk is full (SQLITE_FULL, PostgreSQL 53100): 507 with Retry-After, as a full
  // blob store is; the request was not at fault.
  if (isOutOfSpace(e)) return storageFailure(e, "The server's storage is full; retry later");
  // A blob store that cannot be read now (a download while S3 is down): 503, retry.
  if (e instanceof BlobReadError)
    return fail("storage_unavailable", `The blob store could not be read; retry (request id ${requestId})`, {
      retryAfter: 1,
    });
  const storage = isStorageError(e);
  return fail(
    storage ? "storage_inconsistency" : "database_error",
    `${storage ? "A storage" : "A database"} error occurred; retry later (request id ${requestId})`,
  );
}

/** Builds the HTTP app and its services on `deps`. */
export function createApp(deps: AppDeps) {
  const s = buildServices(deps);
  const app = new Elysia()
    .use(routeTemplatePlugin())
    .onError(({ error, code, request }) => {
      const v1 = inV1Space(new URL(request.url).pathname);
      if (code === "NOT_FOUND" && v1) return unmountedResponse();
      const requestId = currentRequest()?.id ?? randomHex(8);
      const authFailure = authFailureReason(error);
      if (authFailure) deps.metrics?.authFailures.inc({ reason: authFailure });
      const e = toAppError(error, code, s, request, requestId);
      // The v1 family answers flat bodies, and every malformed request there is `bad_request`.
      return v1
        ? errorResponse(e.status === 400 ? fail("bad_request", e.message, e.extra) : e, requestId, true)
        : errorResponse(e, requestId);
    })
    .use(healthController(s))
    .use(probesController(s))
    .use(capabilitiesController(s.deps.config.versionRetentionSeconds > 0))
    .use(foldersController(s))
    .use(sessionsController(s))
    .use(filesController(s))
    .use(versionsController(s))
    .use(batchController(s))
    .use(quotaController(s))
    .use(summariesController(s))
    .use(searchController(s))
    .use(drivePreviewController(s))
    .use(drivesController(s))
    .use(sharesController(s, s.shareLimiter))
    .use(folderSharesController(s, s.shareLimiter))
    .use(sharePageController());
  if (deps.metrics && deps.config.metricsPort === null) app.use(metricsController(deps.metrics));
  if (deps.config.openApi) app.use(openApi());
  const answer = (request: Request): Promise<Response> => app.handle(request);
  const handle = instrumentHandle(
    (request) => (request.method === "HEAD" ? answerHead(request, answer) : answer(request)),
    deps.log,
    deps.metrics,
  );
  return { app, services: s, handle };
}

/** The app type, for tests. */
export type App = ReturnType<typeof createApp>["app"];
