#!/usr/bin/env bash
# The whole test suite, on a fresh machine with Node/npm: installs Bun (through npm) where it is
# missing, the project's packages, and the real S3 server (Ceph RGW from Debian packages; needs
# root) that the S3 tests start themselves, then runs the suite in three passes:
#   1. `bun test`: everything but the chaos suite, with the HTTP and end-to-end tests on the local
#      disk store, and the multi-node tests (`packages/server/test/multinode`: 3 server processes on one
#      PostgreSQL database and one RGW bucket; ESYNC_TEST_CLUSTER_DATABASE=sqlite for one shared
#      SQLite file instead);
#   2. the S3 pass: `packages/server/test/http` and `packages/server/test/e2e` again with ESYNC_TEST_STORAGE=s3, every blob in a
#      bucket of the real S3 server (packages/server/test/e2e/s3-fault.test.ts is left out: it runs on S3, on an
#      RGW of its own, in pass 1 already);
#   3. the PostgreSQL pass: `packages/server/test/http` and the HTTP browse tests (`packages/server/test/search/browse.test.ts`,
#      `packages/server/test/search/product-filters.test.ts`) again with ESYNC_TEST_DATABASE=postgres and
#      ESYNC_TEST_STORAGE=s3, the metadata in PostgreSQL (a throw-away cluster the tests start with
#      scripts/pg/ in /tmp/esync-pg, or ESYNC_TEST_DATABASE_URL) and every blob on the real S3
#      server (on the local disk store when the S3 tests are skipped), with the CLI share and
#      drive tests (their servers take the test stores; the drive test runs two nodes, the owner
#      on one and the member on the other); then the two-node tests
#      (packages/server/test/sessions/cross-node.test.ts, two apps sharing one data directory) on PostgreSQL;
#   4. the chaos pass: `packages/server/test/chaos` (kill loop, floods, memory bombs, full disk, fuzz, nested JSON,
#      trickle, quota and path attacks, stalls, 200 x 16 MiB chunk PUTs, crash after bytes, a
#      stopped S3) and the reset-under-send check (packages/server/test/e2e/error-drain.test.ts, also in pass 1)
#      against the real server process, alone so that its timing does not compete with other tests. Its
#      figures are the `chaos:` lines and packages/server/bench/results/chaos.json. CHAOS_KILLS (default 25),
#      CHAOS_FUZZ_RUNS (default 2000) and CHAOS_SEED (replay) tune it.
# The last lines name every failed test, with its pass, and sum every pass: "tests: N passed, N failed".
# Exits non-zero if any failed.
# Extra arguments go to the `bun test` of pass 1 only (e.g. a path filter), and then the S3 and
# PostgreSQL and chaos passes are not run; for one file on S3: `ESYNC_TEST_STORAGE=s3 bun test packages/server/test/http/files.test.ts`;
# the chaos suite alone: `bun test packages/server/test/chaos` (the floods need `ulimit -n` of 3,000 or more).
# ESYNC_TEST_SKIP_S3=1 (developers without root; ignored under CI) skips every S3 test, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bun >/dev/null 2>&1 || npm install -g bun
bun install --frozen-lockfile
skip_s3=0
if [ "${ESYNC_TEST_SKIP_S3:-}" = "1" ] && [ -z "${CI:-}" ]; then skip_s3=1; fi
if [ "$skip_s3" != 1 ]; then bash scripts/s3/install.sh; fi
# PostgreSQL from Debian packages (the PostgreSQL pass and the packages/server/test/db suites start clusters of it).
if [ "$(id -u)" = 0 ]; then bash scripts/pg/install.sh; fi
# Debian packages some tests drive: tmux (packages/cli/test/progress-tmux.test.ts captures the progress
# display in an 80-column terminal) and chromium (packages/server/test/e2e/openapi-page.test.ts renders /swagger
# with every request outside the server blocked; packages/share-page/test/browser.test.ts opens share links).
missing_debs=()
command -v tmux >/dev/null 2>&1 || missing_debs+=(tmux)
command -v chromium >/dev/null 2>&1 || missing_debs+=(chromium)
if [ ${#missing_debs[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "== installing ${missing_debs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing_debs[@]}" >/dev/null
fi

# The recipient page of share links is bundled from packages/share-page/src/ (the server does the same at
# start-up, in memory); a build error fails here first.
bun run build:share-page

# The chaos floods open 2,500 connections from this process and as many in the server it starts.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "== open files limit: $(ulimit -n)"

passed=0
failed=0
rc=0
# Every "(fail)" line of every pass, with the pass it came from, repeated after the totals so that
# the end of the output (often all a CI page keeps) names the failed tests.
fail_lines=$(mktemp)
pass_name="pass 1 (disk)"
# Runs `bun test ARGS...`, showing its output, and adds its pass/fail counts to the totals.
run_pass() {
  local log prc p f
  log=$(mktemp)
  set +e
  # --timeout: the per-test limit of bunfig.toml's [test] section is not applied by this Bun
  # (1.4.5: every test stops at the 5 s default), and the end-to-end tests need minutes.
  bun test --timeout 600000 "$@" 2>&1 | tee "$log"
  prc=${PIPESTATUS[0]}
  set -e
  p=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  grep -E '^\(fail\)' "$log" | awk '!seen[$0]++' | sed "s/^/[$pass_name] /" >>"$fail_lines" || true
  rm -f "$log"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$prc" -ne 0 ]; then rc=$prc; fi
}

t0=$SECONDS
if [ $# -gt 0 ]; then run_pass "$@"; else run_pass --path-ignore-patterns='packages/server/test/chaos/**'; fi
t1=$SECONDS
if [ $# -gt 0 ]; then
  echo "== S3 pass not run (arguments given)"
elif [ "$skip_s3" = 1 ]; then
  echo "!!! ESYNC_TEST_SKIP_S3=1: the S3 pass is SKIPPED. It is not optional in CI. !!!"
else
  echo "== S3 pass: packages/server/test/http and packages/server/test/e2e on the S3 store (ESYNC_TEST_STORAGE=s3)"
  pass_name="S3 pass"
  ESYNC_TEST_STORAGE=s3 run_pass packages/server/test/http packages/server/test/e2e packages/share-page/test/browser.test.ts --path-ignore-patterns='packages/server/test/e2e/s3-fault.test.ts'
  echo "== pass 1 (disk): $((t1 - t0)) s, S3 pass: $((SECONDS - t1)) s"
fi
if [ $# -gt 0 ]; then
  echo "== PostgreSQL pass not run (arguments given)"
else
  t3=$SECONDS
  pg_storage=s3
  if [ "$skip_s3" = 1 ]; then pg_storage=disk; fi
  echo "== PostgreSQL pass: packages/server/test/http and browse on PostgreSQL (ESYNC_TEST_DATABASE=postgres, ESYNC_TEST_STORAGE=$pg_storage), then two nodes on one database"
  pass_name="PostgreSQL pass"
  ESYNC_TEST_DATABASE=postgres ESYNC_TEST_STORAGE=$pg_storage run_pass packages/server/test/http \
    packages/server/test/search/browse.test.ts packages/server/test/search/product-filters.test.ts packages/cli/test/share.test.ts packages/cli/test/drive.test.ts
  ESYNC_TEST_DATABASE=postgres run_pass packages/server/test/sessions/cross-node.test.ts
  echo "== PostgreSQL pass: $((SECONDS - t3)) s"
fi
if [ $# -gt 0 ]; then
  echo "== chaos pass not run (arguments given)"
else
  t2=$SECONDS
  echo "== chaos pass: packages/server/test/chaos against the real server process"
  rm -f packages/server/bench/results/chaos.json
  pass_name="chaos pass"
  run_pass packages/server/test/chaos packages/server/test/e2e/error-drain.test.ts
  echo "== chaos pass: $((SECONDS - t2)) s"
  grep -h . packages/server/bench/results/chaos.json 2>/dev/null || true
fi
if [ -s "$fail_lines" ]; then
  echo "== failed tests:"
  cat "$fail_lines"
fi
rm -f "$fail_lines"
echo "tests: ${passed} passed, ${failed} failed"
exit "$rc"
