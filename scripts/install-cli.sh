#!/usr/bin/env bash
# Installs the `esync` command: a small wrapper script that runs this checkout's CLI
# (packages/cli/src/esync.ts) with the Bun found now, so it works from any directory and shell.
#   scripts/install-cli.sh            -> ~/.local/bin/esync
#   ESYNC_BIN_DIR=/usr/local/bin scripts/install-cli.sh
# Installs the packages first when node_modules is missing. Prints the PATH line to add when the
# directory is not on PATH yet. Run it again after moving the checkout; remove the file to uninstall.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin_dir="${ESYNC_BIN_DIR:-$HOME/.local/bin}"
bun_path="$(command -v bun || true)"
if [ -z "$bun_path" ]; then
  echo "install-cli: bun is not on PATH; install it first: npm install -g bun" >&2
  exit 1
fi
bun_path="$(readlink -f "$bun_path")"
if [ ! -d "$repo/node_modules" ]; then (cd "$repo" && "$bun_path" install --frozen-lockfile); fi
mkdir -p "$bin_dir"
target="$bin_dir/esync"
cat >"$target" <<WRAPPER
#!/bin/sh
# esync command-line client, installed by $repo/scripts/install-cli.sh
exec "$bun_path" "$repo/packages/cli/src/esync.ts" "\$@"
WRAPPER
chmod 755 "$target"
echo "installed $target -> $repo/packages/cli/src/esync.ts"
case ":$PATH:" in
  *":$bin_dir:"*) echo "esync is on your PATH: try \`esync --help\`" ;;
  *)
    echo "$bin_dir is not on your PATH yet. Add this line to ~/.bashrc (or ~/.zshrc), then open a new shell:"
    echo "  export PATH=\"$bin_dir:\$PATH\""
    ;;
esac
