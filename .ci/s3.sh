#!/usr/bin/env bash
# Real S3 server for the test suite (Ceph RGW from Debian packages, scripts/s3/).
#   bash .ci/s3.sh        installs the packages if missing, then starts RGW where
#                         test/support/s3-server.ts looks for it ($ESYNC_TEST_S3_DIR, default
#                         /tmp/esync-rgw/server); the tests find it there, nothing is exported.
#   bash .ci/s3.sh stop   stops it (the tests leave a server started here running).
# Prints how long each step took. Exits non-zero if RGW cannot be installed or started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${ESYNC_TEST_S3_DIR:-/tmp/esync-rgw}

if [ "${1:-start}" = stop ]; then
  bash scripts/s3/stop.sh "$ROOT/server"
  exit 0
fi

t0=$SECONDS
bash scripts/s3/install.sh
t1=$SECONDS
port=17480
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 10)); done
mkdir -p "$ROOT"
bash scripts/s3/start.sh "$ROOT/server" "$port" >/dev/null
# Started here, not by a test process: the tests must not stop it when they finish.
rm -f "$ROOT/managed"
echo "s3: RGW at http://127.0.0.1:$port (install $((t1 - t0)) s, start $((SECONDS - t1)) s)"
