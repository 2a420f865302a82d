/**
 * @module server/http/peer
 * The network address of each request's client, as the listener saw it (`src/server.ts` records
 * it). Behind a reverse proxy every request comes from the proxy's address.
 */

const peers = new WeakMap<Request, string>();

/** Records `address` (IP address text) as the client of `request`. */
export function setPeerAddress(request: Request, address: string): void {
  peers.set(request, address);
}

/** The client address of `request`, or `""` when none was recorded (in-process requests). */
export function peerAddress(request: Request): string {
  return peers.get(request) ?? "";
}
