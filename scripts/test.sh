#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Node/npm: installs Bun (through npm) where it is
# missing, the project's packages, and the real S3 server (Ceph RGW from Debian packages; needs
# root) that the S3 tests start themselves, then runs `bun test` and prints one summary line
# "tests: N passed, N failed". Extra arguments go to `bun test` (e.g. a path filter).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bun >/dev/null 2>&1 || npm install -g bun
bun install --frozen-lockfile
if [ "${ESYNC_TEST_SKIP_S3:-}" != "1" ]; then bash scripts/s3/install.sh; fi
log=$(mktemp)
set +e
bun test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
rm -f "$log"
echo "tests: ${passed} passed, ${failed} failed"
exit "$rc"
