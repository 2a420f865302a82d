/**
 * @module cli/commands/passphrase
 * `esync passphrase set|remove`: encrypts the stored mnemonic with a (new) passphrase, or
 * stores it as plain words again (`mnemonic-seal.ts` describes the format and parameters).
 */

import { identityFromMnemonic } from "@esync/client/keys.ts";
import type { Command } from "commander";
import {
  configDir,
  configPaths,
  type GlobalOptions,
  newPassphraseFromEnv,
  readMnemonic,
  readMnemonicFile,
  writeMnemonic,
} from "../config.ts";
import { isSealed } from "../mnemonic-seal.ts";
import { printJson, println } from "../output.ts";
import { promptNewPassphrase } from "../prompt.ts";

/** Registers `esync passphrase ...` on `program`. */
export function registerPassphrase(program: Command): void {
  const cmd = program
    .command("passphrase")
    .description("encrypt the stored mnemonic with a passphrase, change it, or remove it");

  cmd
    .command("set")
    .description("encrypt the stored mnemonic with a new passphrase (asks the old one first if any)")
    .addHelpText(
      "after",
      `
The passphrase is asked twice with echo off; scripts set $ESYNC_NEW_PASSPHRASE (and
$ESYNC_PASSPHRASE for the current one). Key: Argon2id (19 MiB, 2 passes); cipher:
XChaCha20-Poly1305. Forgetting the passphrase is like losing the file: keep the words.`,
    )
    .action(async (_opts: unknown, c: Command) => {
      const g = c.optsWithGlobals<GlobalOptions>();
      const paths = configPaths(configDir(g.configDir));
      const mnemonic = await readMnemonic(paths);
      await identityFromMnemonic(mnemonic); // never seal something that is not a valid mnemonic
      const passphrase = process.stdin.isTTY ? await promptNewPassphrase() : newPassphraseFromEnv();
      await writeMnemonic(paths, mnemonic, passphrase ?? (await promptNewPassphrase()));
      if (g.json) printJson({ mnemonic_file: paths.mnemonic, encrypted: true });
      else println(`${paths.mnemonic} is now encrypted with the new passphrase`);
    });

  cmd
    .command("remove")
    .description("store the mnemonic as plain words again (asks the current passphrase)")
    .action(async (_opts: unknown, c: Command) => {
      const g = c.optsWithGlobals<GlobalOptions>();
      const paths = configPaths(configDir(g.configDir));
      const sealed = isSealed(await readMnemonicFile(paths));
      const mnemonic = await readMnemonic(paths);
      if (sealed) await writeMnemonic(paths, mnemonic);
      if (g.json) printJson({ mnemonic_file: paths.mnemonic, encrypted: false, changed: sealed });
      else
        println(
          sealed
            ? `${paths.mnemonic} holds the plain mnemonic again (mode 0600)`
            : `${paths.mnemonic} had no passphrase; nothing changed`,
        );
    });
}
