#!/usr/bin/env bash
# Stops or starts only the S3 gateway (radosgw) of a test S3 server that scripts/s3/start.sh
# started in DIR; the monitor and the OSD keep running, so every object stored survives. For
# fault tests: S3 goes away (connections reset, then refused) and comes back with its data.
#
# Usage: scripts/s3/gateway.sh DIR stop|start
#   stop   SIGKILL radosgw (a crash: no graceful drain, which takes ~4 s on SIGTERM) and wait
#          until it is gone. Idempotent.
#   start  start radosgw again on the same port and wait until S3 accepts the test keys
#          (DIR/s3.env); about 0.2 s here. Idempotent.
set -euo pipefail

DIR=${1:?usage: gateway.sh DIR stop|start}
ACTION=${2:?usage: gateway.sh DIR stop|start}
DIR=$(cd "$DIR" && pwd)
CONF="$DIR/ceph.conf"
PIDFILE="$DIR/pids/rgw"
[ -f "$CONF" ] && [ -f "$DIR/s3.env" ] || {
  echo "s3/gateway: no S3 server started by scripts/s3/start.sh in $DIR" >&2
  exit 1
}

# The gateway's process id, if it runs (the process must name our ceph.conf: no recycled pid).
running_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && tr "\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$CONF" && echo "$pid"
}

case "$ACTION" in
stop)
  pid=$(running_pid) || exit 0
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || exit 0
    sleep 0.05
  done
  echo "s3/gateway: radosgw $pid did not exit" >&2
  exit 1
  ;;
start)
  # shellcheck disable=SC1091
  . "$DIR/s3.env"
  if ! running_pid >/dev/null; then
    setsid radosgw -n client.rgw.esync -c "$CONF" -f </dev/null >>"$DIR/log/rgw.out" 2>&1 &
    echo $! >"$PIDFILE"
  fi
  EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
  for _ in $(seq 1 300); do
    running_pid >/dev/null || {
      echo "s3/gateway: radosgw exited (see $DIR/log)" >&2
      exit 1
    }
    if curl -sf --max-time 2 --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
      -H "x-amz-content-sha256: $EMPTY_SHA256" "$ENDPOINT/" -o /dev/null 2>/dev/null; then exit 0; fi
    sleep 0.1
  done
  echo "s3/gateway: radosgw did not answer at $ENDPOINT within 30 s" >&2
  exit 1
  ;;
*)
  echo "usage: gateway.sh DIR stop|start" >&2
  exit 2
  ;;
esac
