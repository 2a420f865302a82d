#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Node/npm: installs Bun (through npm) where it is
# missing, the project's packages, and the real S3 server (Ceph RGW from Debian packages; needs
# root) that the S3 tests start themselves, then runs the suite in two passes:
#   1. `bun test`: everything, with the HTTP and end-to-end tests on the local disk store;
#   2. the S3 pass: `test/http` and `test/e2e` again with ESYNC_TEST_STORAGE=s3, every blob in a
#      bucket of the real S3 server (test/e2e/s3-fault.test.ts is left out: it runs on S3, on an
#      RGW of its own, in pass 1 already).
# The last line sums both passes: "tests: N passed, N failed". Exits non-zero if either failed.
# Extra arguments go to the `bun test` of pass 1 only (e.g. a path filter), and then the S3 pass
# is not run; for one file on S3: `ESYNC_TEST_STORAGE=s3 bun test test/http/files.test.ts`.
# ESYNC_TEST_SKIP_S3=1 (developers without root; ignored under CI) skips every S3 test, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bun >/dev/null 2>&1 || npm install -g bun
bun install --frozen-lockfile
skip_s3=0
if [ "${ESYNC_TEST_SKIP_S3:-}" = "1" ] && [ -z "${CI:-}" ]; then skip_s3=1; fi
if [ "$skip_s3" != 1 ]; then bash scripts/s3/install.sh; fi
# tmux: test/cli/progress-tmux.test.ts captures the progress display in an 80-column terminal.
if ! command -v tmux >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then apt-get install -y -q tmux >/dev/null; fi

passed=0
failed=0
rc=0
# Runs `bun test ARGS...`, showing its output, and adds its pass/fail counts to the totals.
run_pass() {
  local log prc p f
  log=$(mktemp)
  set +e
  # --timeout: bunfig.toml's [test] timeout is not applied by this Bun (tests stop at 5 s).
  bun test --timeout 600000 "$@" 2>&1 | tee "$log"
  prc=${PIPESTATUS[0]}
  set -e
  p=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  rm -f "$log"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$prc" -ne 0 ]; then rc=$prc; fi
}

t0=$SECONDS
run_pass "$@"
t1=$SECONDS
if [ $# -gt 0 ]; then
  echo "== S3 pass not run (arguments given)"
elif [ "$skip_s3" = 1 ]; then
  echo "!!! ESYNC_TEST_SKIP_S3=1: the S3 pass is SKIPPED. It is not optional in CI. !!!"
else
  echo "== S3 pass: test/http and test/e2e on the S3 store (ESYNC_TEST_STORAGE=s3)"
  ESYNC_TEST_STORAGE=s3 run_pass test/http test/e2e --path-ignore-patterns='test/e2e/s3-fault.test.ts'
  echo "== pass 1 (disk): $((t1 - t0)) s, S3 pass: $((SECONDS - t1)) s"
fi
echo "tests: ${passed} passed, ${failed} failed"
exit "$rc"
