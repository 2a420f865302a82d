/**
 * @module server/util/request-context
 * The context of the HTTP request being served, carried through every `await` of its handling by
 * an `AsyncLocalStorage`: its request id (so every log line the request causes names it), once
 * routing has matched its route template, and once authenticated its caller (for the access log
 * and metrics).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomHex } from "@esync/protocol/ids.ts";

/** The context of one request. */
export interface RequestContext {
  /** The `x-request-id` of the request: the client's when well-formed, else generated. */
  readonly id: string;
  /** The matched route template, e.g. `/upload/session/:session_id/chunk/:chunk_index`; null until routed. */
  route: string | null;
  /** SS58 address of the authenticated caller, once known (for the access log). */
  caller?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** A request id a client may choose: 1 to 64 characters of `[A-Za-z0-9._-]`. */
const CLIENT_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The request id for an incoming `x-request-id` header value: that value when well-formed, else 16 random hex characters. */
export function requestIdFrom(header: string | null): string {
  return header !== null && CLIENT_ID.test(header) ? header : randomHex(8);
}

/** Runs `fn` with `ctx` as the current request context (for every `await` under it). */
export function withRequestContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** Records the authenticated caller of the current request (no-op outside a request). */
export function noteCaller(address: string): void {
  const ctx = storage.getStore();
  if (ctx) ctx.caller = address;
}

/** The context of the request being served, or undefined outside one. */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}
