/**
 * @module client/encrypt-worker
 * Worker side of `EncryptPool`: encrypts one frame per message (docs/protocol.md#ciphertext framing, via
 * `encryptFrame`). Message in: `{ id, key, baseNonce, index, plaintext }` (plaintext buffer
 * transferred); message out: `{ id, frame }` (frame buffer transferred) or `{ id, error }`.
 */
import { encryptFrame } from "./frame.ts";

declare const self: Worker;

interface Job {
  id: number;
  key: Uint8Array;
  baseNonce: Uint8Array;
  index: number;
  plaintext: Uint8Array;
}

self.onmessage = (event: MessageEvent<Job>) => {
  const { id, key, baseNonce, index, plaintext } = event.data;
  try {
    const frame = encryptFrame(key, baseNonce, index, plaintext);
    self.postMessage({ id, frame }, [frame.buffer]);
  } catch (e) {
    self.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
};
