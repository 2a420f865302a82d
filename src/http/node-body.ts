/**
 * @module http/node-body
 * Request bodies of the node:http engine as web streams, without the cost of the default path.
 *
 * @whatwg-node/server builds each `Request` with the node `IncomingMessage` itself as the body,
 * and Bun turns that async iterable into a stream by writing every piece into a stream buffer of
 * its own (a copy of every byte received; about 0.4 CPU-s per GiB here). `NodeBodyRequest`, given
 * to the adapter as its `Request`, instead wraps the message in a plain `ReadableStream` that
 * hands the message's own buffers on as they come: one piece per read, and nothing read from the
 * socket before the handler asks for it.
 *
 * Between reads no `data` listener is attached and the message is paused, so when a handler
 * answers without reading the whole body, the adapter's `resume()` drains the rest into nothing
 * and the keep-alive connection goes on; cancelling the stream does the same.
 */
import { IncomingMessage } from "node:http";

/** The error a body stream fails with when the client's connection closed before the body ended. */
function prematureClose(): Error {
  return Object.assign(new Error("the request body ended early (connection closed)"), {
    code: "ECONNRESET",
  });
}

/**
 * The body of `req` as a `ReadableStream` of its own pieces (no copies). It fails when the
 * message fails or closes before its end; cancelling it drains and discards the rest.
 */
export function nodeBodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let failure: Error | undefined;
  let ended = false;
  let wake: (() => void) | null = null;
  /** Detaches the pending read's `data` listener, if a read is pending. */
  let detach: (() => void) | null = null;
  let cancelled = false;
  // Listeners for the message's life: an `error` with no listener would be thrown, and `end` or
  // `close` may come while no read is pending.
  req.on("error", (e) => {
    failure ??= e;
    wake?.();
  });
  req.once("end", () => {
    ended = true;
    wake?.();
  });
  req.once("close", () => {
    if (!ended && !req.complete) failure ??= prematureClose();
    wake?.();
  });
  req.pause();
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (failure) return Promise.reject(failure);
        if (ended) {
          controller.close();
          return;
        }
        return new Promise<void>((resolve, reject) => {
          const settle = () => {
            req.off("data", onData);
            wake = null;
            detach = null;
          };
          const onData = (piece: Buffer) => {
            req.pause();
            settle();
            // An exception in an event listener would end the process: never let one escape.
            try {
              if (!cancelled) controller.enqueue(piece);
            } catch {}
            resolve();
          };
          detach = () => {
            settle();
            resolve();
          };
          wake = () => {
            settle();
            if (cancelled) resolve();
            else if (failure) reject(failure);
            else {
              controller.close();
              resolve();
            }
          };
          req.on("data", onData);
          req.resume();
        });
      },
      cancel() {
        // A read may be pending (the consumer gave up while waiting): its listener must not
        // enqueue into the closed stream; the rest of the body drains into nothing.
        cancelled = true;
        detach?.();
        req.resume();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * `Request` whose body, when it is a node `IncomingMessage`, is read through `nodeBodyStream`;
 * for @whatwg-node/server's `fetchAPI.Request`.
 */
export class NodeBodyRequest extends Request {
  constructor(input: RequestInfo | URL, init?: RequestInit) {
    const body = init?.body as unknown;
    super(input, body instanceof IncomingMessage ? { ...init, body: nodeBodyStream(body) } : init);
  }
}
