#!/usr/bin/env bash
# Stops the test S3 server that scripts/s3/start.sh started in DIR and deletes its data
# (logs in DIR/log are kept). Only the processes recorded in DIR/pids whose command line
# names DIR/ceph.conf are signalled: TERM, then KILL after 3 s (the data is thrown away anyway). Idempotent.
# Usage: scripts/s3/stop.sh DIR
set -uo pipefail

DIR=${1:?usage: stop.sh DIR}
[ -d "$DIR" ] || exit 0
DIR=$(cd "$DIR" && pwd)
CONF="$DIR/ceph.conf"

rm -f "$DIR/s3.env"
pids=()
for f in "$DIR"/pids/rgw "$DIR"/pids/osd "$DIR"/pids/mon; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  # Guard against a recycled process id: the process must be ours.
  if [[ $pid =~ ^[0-9]+$ ]] && tr "\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$CONF"; then
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  fi
  rm -f "$f"
done

for _ in $(seq 1 30); do
  left=()
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
  [ ${#left[@]} -eq 0 ] && break
  sleep 0.1
done
for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null; done
[ ${#pids[@]} -gt 0 ] && echo "s3/stop: stopped ${#pids[@]} process(es) in $DIR" >&2

if [ -f "$DIR/.esync-s3" ]; then rm -rf "${DIR:?}"/{mon,osd,rgw,run,crash,monmap}; fi
exit 0
