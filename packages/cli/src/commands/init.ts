/**
 * @module cli/commands/init
 * `esync init`: creates a new master mnemonic (or imports one), stores it with mode 0600 in
 * the configuration directory with the server URL, and checks that the server answers.
 * Run again on an initialised directory it only updates `--server` / `--device`; replacing
 * the mnemonic takes `--force`.
 */

import { EsyncApi } from "@esync/client/api.ts";
import {
  generateMnemonic,
  identityFromMnemonic,
  normalizeMnemonic,
  validateMnemonic,
} from "@esync/client/keys.ts";
import type { Command } from "commander";
import {
  type CliConfigFile,
  configDir,
  configPaths,
  DEFAULT_SERVER_URL,
  defaultDeviceName,
  type GlobalOptions,
  hasMnemonic,
  newPassphraseFromEnv,
  normalizeServerUrl,
  readConfig,
  serverOverride,
  writeConfig,
  writeMnemonic,
} from "../config.ts";
import { describeError, eprintln, printJson, println, printSecret, usageError } from "../output.ts";
import { promptNewPassphrase, readSecret } from "../prompt.ts";

interface InitOptions {
  import?: boolean;
  words: string;
  device?: string;
  force?: boolean;
  passphrase?: boolean;
}

/** Asks the server's `/health`; a warning line (not an error) when it does not answer. */
async function checkServer(url: string): Promise<string | null> {
  try {
    const h = await new EsyncApi({ baseUrl: url, timeoutMs: 5000 }).health();
    return h.status === "healthy" ? null : `server ${url} reports status ${h.status}`;
  } catch (e) {
    return `server ${url} did not answer /health (${describeError(e)}); commands will fail until it does`;
  }
}

/** Registers `esync init` on `program`. */
export function registerInit(program: Command): void {
  program
    .command("init")
    .description("create (or --import) the master mnemonic and set the server URL")
    .option("--import", "import an existing mnemonic (prompted, or read from stdin when piped)")
    .option("--words <n>", "words of a new mnemonic: 12 or 24", "24")
    .option("--device <name>", "device name recorded when folders are registered (default: host name)")
    .option("--force", "replace an existing mnemonic (the old one is lost unless backed up)")
    .option(
      "--passphrase",
      "encrypt the stored mnemonic with a passphrase (prompted twice, or $ESYNC_NEW_PASSPHRASE / $ESYNC_PASSPHRASE)",
    )
    .addHelpText(
      "after",
      `
The mnemonic is the only key to your files: it is stored in <config-dir>/mnemonic (mode 0600)
and shown once at creation. Write it down; without it nothing can be decrypted. With
--passphrase the file holds it encrypted (Argon2id + XChaCha20-Poly1305); every command then
asks for the passphrase, or reads $ESYNC_PASSPHRASE. \`esync passphrase set|remove\` changes it.

Examples:
  esync init --server http://127.0.0.1:8080
  echo "word1 word2 ... word24" | esync init --import --server https://sync.example`,
    )
    .action(async (opts: InitOptions, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions & InitOptions>();
      const paths = configPaths(configDir(g.configDir));
      const override = serverOverride(g.server);
      const server = override === undefined ? undefined : normalizeServerUrl(override);
      const exists = await hasMnemonic(paths);

      if (exists && !opts.force) {
        if (opts.import)
          throw usageError(`${paths.dir} already holds a mnemonic; pass --force to replace it`);
        const config = await readConfig(paths);
        const updated: CliConfigFile = {
          ...config,
          server_url: server ?? config.server_url,
          device_name: opts.device ?? config.device_name,
        };
        await writeConfig(paths, updated);
        const warning = await checkServer(updated.server_url);
        if (g.json) {
          printJson({
            created: false,
            imported: false,
            address: config.address,
            server_url: updated.server_url,
            config_dir: paths.dir,
            server_ok: warning === null,
          });
          return;
        }
        println(`already initialised in ${paths.dir} (address ${config.address})`);
        println(`server: ${updated.server_url}`);
        if (warning) eprintln(`esync: warning: ${warning}`);
        return;
      }

      let mnemonic: string;
      if (opts.import) {
        mnemonic = normalizeMnemonic(await readSecret("mnemonic: "));
        if (!validateMnemonic(mnemonic))
          throw usageError("not a valid English BIP39 mnemonic (check the words and their count)");
      } else {
        if (opts.words !== "12" && opts.words !== "24") throw usageError("--words must be 12 or 24");
        mnemonic = generateMnemonic(opts.words === "12" ? 12 : 24);
      }
      const identity = await identityFromMnemonic(mnemonic);
      const passphrase = opts.passphrase
        ? (newPassphraseFromEnv() ?? (await promptNewPassphrase()))
        : undefined;
      const config: CliConfigFile = {
        version: 1,
        server_url: server ?? DEFAULT_SERVER_URL,
        address: identity.address,
        device_name: opts.device ?? defaultDeviceName(),
        created_at: Math.floor(Date.now() / 1000),
      };
      await writeMnemonic(paths, identity.mnemonic, passphrase);
      await writeConfig(paths, config);
      const warning = await checkServer(config.server_url);

      if (g.json) {
        printJson({
          created: !opts.import,
          imported: opts.import === true,
          address: identity.address,
          server_url: config.server_url,
          config_dir: paths.dir,
          server_ok: warning === null,
          passphrase: passphrase !== undefined,
          ...(opts.import ? {} : { mnemonic: identity.mnemonic }),
        });
        return;
      }
      if (!opts.import) {
        println("Your new master mnemonic (write it down and keep it safe; it is shown only once):");
        println();
        printSecret(`  ${identity.mnemonic}`);
        println();
      }
      println(`${opts.import ? "imported" : "created"} identity ${identity.address}`);
      println(
        `mnemonic stored in ${paths.mnemonic} (mode 0600${passphrase === undefined ? "" : ", encrypted with your passphrase"})`,
      );
      println(`server: ${config.server_url}`);
      if (warning) eprintln(`esync: warning: ${warning}`);
    });
}
