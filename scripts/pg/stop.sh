#!/usr/bin/env bash
# Stops the PostgreSQL cluster that scripts/pg/start.sh started in DIR and deletes its data
# (logs in DIR/log are kept). Fast shutdown, then an immediate one after 10 s; only the
# postmaster recorded in DIR/data/postmaster.pid whose command line names DIR/data is signalled.
# Idempotent.
# Usage: scripts/pg/stop.sh DIR
set -uo pipefail

DIR=${1:?usage: stop.sh DIR}
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)
DATA="$DIR/data"

rm -f "$DIR/pg.env"
pid=$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null || true)
# Guard against a recycled process id: the process must be ours.
if [[ $pid =~ ^[0-9]+$ ]] && tr "\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$DATA"; then
  kill -INT "$pid" 2>/dev/null # fast shutdown: abort transactions, close sessions
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then kill -QUIT "$pid" 2>/dev/null; sleep 0.5; fi
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  echo "pg/stop: stopped the server in $DIR" >&2
fi

if [ -f "$DIR/.esync-pg" ]; then rm -rf "${DIR:?}"/{data,run}; fi
exit 0
