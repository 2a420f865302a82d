/**
 * @module server/http/head
 * `HEAD` requests, answered as their `GET` without the body (RFC 9110 §9.3.2). Elysia 1.4 runs a
 * `HEAD` on a `GET` route and reads the whole response body to count it (a whole download read
 * from the store), and on a path with parameters it ignores an explicit `HEAD` route. So a `HEAD`
 * becomes its `GET` here, marked, and the answer loses its body. A handler whose body is costly to
 * open (`/download`) asks `isHead(request)` and answers with its headers only.
 */

const heads = new WeakSet<Request>();

/** True when `request` is the `GET` standing for a client's `HEAD` (see `answerHead`). */
export function isHead(request: Request): boolean {
  return heads.has(request);
}

/**
 * Answers the `HEAD` `request` with `handle`'s answer to the same `GET`, without its body: the
 * status and headers are kept; `Content-Length` is the handler's when it set one, else the length
 * of the body it produced.
 */
export async function answerHead(
  request: Request,
  handle: (request: Request) => Promise<Response>,
): Promise<Response> {
  const get = new Request(request.url, { method: "GET", headers: request.headers });
  heads.add(get);
  const res = await handle(get);
  const headers = new Headers(res.headers);
  if (res.body) {
    if (headers.has("content-length")) await res.body.cancel();
    else headers.set("content-length", String((await res.arrayBuffer()).byteLength));
  }
  return new Response(null, { status: res.status, statusText: res.statusText, headers });
}
