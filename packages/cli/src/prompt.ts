/**
 * @module cli/prompt
 * Questions to the person at the terminal: secrets are read with echo off.
 */
import { InterruptedError, usageError } from "./output.ts";

/**
 * Reads one line from stdin: a prompt with echo off when stdin is a terminal, else the
 * first non-empty line of whatever is piped in.
 */
export async function readSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const text = await Bun.stdin.text();
    return text.split("\n").find((l) => l.trim() !== "") ?? "";
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let line = "";
    const finish = (fn: () => void) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      fn();
    };
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return finish(() => resolve(line));
        if (ch === "\u0003") return finish(() => reject(new InterruptedError()));
        if (ch === "\u007f" || ch === "\b") line = line.slice(0, -1);
        else if (ch >= " ") line += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/**
 * A new passphrase typed twice with echo off (they must match and not be empty). Usage error
 * when stdin is not a terminal: scripts set `ESYNC_PASSPHRASE` / `ESYNC_NEW_PASSPHRASE`.
 */
export async function promptNewPassphrase(): Promise<string> {
  if (!process.stdin.isTTY)
    throw usageError("no terminal to ask for a passphrase: set ESYNC_NEW_PASSPHRASE (or ESYNC_PASSPHRASE)");
  const first = await readSecret("new passphrase: ");
  if (first === "") throw usageError("an empty passphrase protects nothing");
  const again = await readSecret("repeat passphrase: ");
  if (again !== first) throw usageError("the passphrases differ; nothing changed");
  return first;
}
