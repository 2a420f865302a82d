/**
 * @module share-page/argon2-worker
 * The recipient page's Web Worker: the Argon2id step of a password link (about a second of CPU
 * and 19 MiB), kept off the page's thread so the page stays responsive.
 */
import { sharePasswordKey } from "@esync/client/share-crypto.ts";
import type { Argon2Request, Argon2Response } from "./protocol.ts";

self.onmessage = (event: MessageEvent<Argon2Request>) => {
  const { password, salt } = event.data;
  const answer: Argon2Response = { key: sharePasswordKey(password, salt) };
  self.postMessage(answer);
};
