#!/usr/bin/env bash
# Installs the Debian packages of the test S3 server (Ceph RGW: one mon, one OSD, radosgw).
# Idempotent: does nothing when every package is already installed. Needs root (CI runs as root).
# Usage: scripts/s3/install.sh
set -euo pipefail

PACKAGES=(ceph-mon ceph-osd radosgw uuid-runtime curl)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "s3/install: all packages present (${PACKAGES[*]})"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "s3/install: need root to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "s3/install: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "s3/install: done"
