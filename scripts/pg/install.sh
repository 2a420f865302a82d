#!/usr/bin/env bash
# Installs PostgreSQL from the Debian packages (server, client and contrib, which holds pg_trgm).
# Idempotent: does nothing when the server binaries are already there. Needs root (CI runs as root).
# Usage: scripts/pg/install.sh
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 &&
  ls /usr/share/postgresql/*/extension/pg_trgm.control >/dev/null 2>&1; then
  echo "pg/install: PostgreSQL present ($(ls -d /usr/lib/postgresql/*/bin | tr '\n' ' '))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "pg/install: need root to install postgresql" >&2
    exit 1
  fi
fi

echo "pg/install: installing postgresql"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# The Debian package creates and starts a default cluster; the tests never use it.
$SUDO apt-get install -y -qq --no-install-recommends postgresql postgresql-contrib >/dev/null
echo "pg/install: done"
