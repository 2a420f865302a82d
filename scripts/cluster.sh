#!/usr/bin/env bash
# A local esync cluster for trying several nodes: N server processes (default 3) on one
# metadata database and one S3 bucket, each on its own port of 127.0.0.1. Put any HTTP load
# balancer in front of the printed URLs, or point clients at them directly.
#
# Usage: scripts/cluster.sh [start] [--nodes N] [--port FIRST_PORT] [--dir DIR] [--sqlite]
#        scripts/cluster.sh stop [--dir DIR]
#   start      (default) starts everything, prints the node URLs, and stays in the foreground;
#              Ctrl-C (or `scripts/cluster.sh stop` from another terminal) stops it all.
#   --nodes    number of server processes (default 3)
#   --port     port of node 0; node i listens on FIRST_PORT + i (default 8080)
#   --dir      state directory: databases, bucket data, node spools, logs
#              (default $ESYNC_CLUSTER_DIR or /tmp/esync-cluster; wiped at start)
#   --sqlite   one SQLite file shared by the nodes instead of PostgreSQL (one machine only)
#
# The metadata database: PostgreSQL from scripts/pg/ (a throw-away cluster in DIR/pg), or the
# server at ESYNC_DATABASE_URL when that is set. The bucket: a Ceph RGW from scripts/s3/ in
# DIR/s3, or the S3 server at ESYNC_S3_ENDPOINT (with ESYNC_S3_ACCESS_KEY, ESYNC_S3_SECRET_KEY,
# optional ESYNC_S3_REGION and ESYNC_S3_BUCKET) when that is set. Installing PostgreSQL or Ceph
# (scripts/pg/install.sh, scripts/s3/install.sh) needs root. Every other ESYNC_* variable set
# here (ESYNC_LOG_LEVEL, ESYNC_SWEEP_INTERVAL_SECONDS, ...) is passed to every node, so the
# settings match across nodes as they must (docs/operator-guide.md#running-several-nodes).
#
# Node i keeps its spool in DIR/node<i>/data and logs to DIR/node<i>/log; DIR/cluster.env holds
# the shared variables and the URLs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cmd=start
nodes=3
first_port=8080
dir=${ESYNC_CLUSTER_DIR:-/tmp/esync-cluster}
sqlite=0

usage() { sed -n '6,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

if [ $# -gt 0 ] && [[ $1 != -* ]]; then cmd=$1; shift; fi
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=${2:?}; shift 2 ;;
    --port) first_port=${2:?}; shift 2 ;;
    --dir) dir=${2:?}; shift 2 ;;
    --sqlite) sqlite=1; shift ;;
    -h | --help) usage ;;
    *) echo "cluster: unknown argument $1" >&2; usage ;;
  esac
done
[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive number, got '$nodes'"
[[ $first_port =~ ^[0-9]+$ ]] || die "--port must be a number, got '$first_port'"

# Stops what a start in $dir left running (idempotent): the nodes, then PostgreSQL and the RGW.
stop_all() {
  [ -d "$dir" ] || return 0
  local f pid
  for f in "$dir"/node*/pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # Only a process of ours: its command line runs this checkout's packages/server/src/main.ts.
    if [[ $pid =~ ^[0-9]+$ ]] && tr "\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$ROOT/packages/server/src/main.ts"; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
  if [ -f "$dir/pg/.esync-pg" ]; then bash "$ROOT/scripts/pg/stop.sh" "$dir/pg" >&2 || true; fi
  if [ -f "$dir/s3/ceph.conf" ]; then bash "$ROOT/scripts/s3/stop.sh" "$dir/s3" >&2 || true; fi
}

if [ "$cmd" = stop ]; then
  if [ -f "$dir/cluster.pid" ]; then
    pid=$(cat "$dir/cluster.pid")
    # The foreground `start` stops everything itself on TERM.
    if [[ $pid =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null; then
      for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$dir/cluster.pid"
  fi
  stop_all
  log "stopped (state kept in $dir)"
  exit 0
fi
[ "$cmd" = start ] || { echo "cluster: unknown command $cmd" >&2; usage; }

command -v bun >/dev/null 2>&1 || die "bun is not installed (npm install -g bun)"
if [ -f "$dir/cluster.pid" ] && kill -0 "$(cat "$dir/cluster.pid")" 2>/dev/null; then
  die "a cluster is already running from $dir (scripts/cluster.sh stop --dir $dir)"
fi
stop_all
rm -rf "${dir:?}"/node* "$dir/cluster.env" "$dir/shared"
mkdir -p "$dir"
echo $$ >"$dir/cluster.pid"

cleanup() {
  trap - INT TERM EXIT
  log "stopping"
  stop_all
  rm -f "$dir/cluster.pid"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  local p=$1
  while port_busy "$p"; do p=$((p + 1)); done
  echo "$p"
}
for i in $(seq 0 $((nodes - 1))); do
  port_busy $((first_port + i)) && die "port $((first_port + i)) on 127.0.0.1 is in use (--port)"
done

declare -A shared=()
# Every ESYNC_* variable of this shell goes to every node.
while IFS='=' read -r name value; do shared[$name]=$value; done < <(env | grep -E '^ESYNC_[A-Z0-9_]+=' || true)
unset 'shared[ESYNC_CLUSTER_DIR]' 'shared[ESYNC_PORT]' 'shared[ESYNC_DATA_DIR]'

if [ -z "${ESYNC_S3_ENDPOINT:-}" ]; then
  if ! command -v radosgw >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "Ceph RGW is not installed: run sudo scripts/s3/install.sh, or set ESYNC_S3_ENDPOINT"
    bash "$ROOT/scripts/s3/install.sh" >&2
  fi
  log "starting Ceph RGW in $dir/s3"
  bash "$ROOT/scripts/s3/start.sh" "$dir/s3" "$(free_port 17600)" >/dev/null
  # shellcheck disable=SC1091
  . "$dir/s3/s3.env"
  shared[ESYNC_S3_ENDPOINT]=$ENDPOINT
  shared[ESYNC_S3_ACCESS_KEY]=$ACCESS_KEY
  shared[ESYNC_S3_SECRET_KEY]=$SECRET_KEY
  shared[ESYNC_S3_REGION]=$REGION
fi
shared[ESYNC_STORAGE]=s3
shared[ESYNC_S3_BUCKET]=${ESYNC_S3_BUCKET:-esync-cluster}

if [ "$sqlite" = 1 ]; then
  mkdir -p "$dir/shared"
  shared[ESYNC_DB_PATH]=$dir/shared/esync.sqlite
  unset 'shared[ESYNC_DATABASE_URL]'
  db_text="SQLite file $dir/shared/esync.sqlite"
elif [ -n "${ESYNC_DATABASE_URL:-}" ]; then
  db_text="PostgreSQL at $ESYNC_DATABASE_URL"
else
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed: run sudo scripts/pg/install.sh, or set ESYNC_DATABASE_URL"
    bash "$ROOT/scripts/pg/install.sh" >&2
  fi
  log "starting PostgreSQL in $dir/pg"
  admin_url=$(bash "$ROOT/scripts/pg/start.sh" "$dir/pg" | tail -1)
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  "$pg_bin/psql" -q -v ON_ERROR_STOP=1 "$admin_url" -c "CREATE DATABASE esync" >&2 ||
    die "could not create the database esync at $admin_url"
  shared[ESYNC_DATABASE_URL]=${admin_url%/*}/esync
  db_text="PostgreSQL at ${shared[ESYNC_DATABASE_URL]}"
fi

node_env=()
for name in "${!shared[@]}"; do node_env+=("$name=${shared[$name]}"); done
printf '%s\n' "${node_env[@]}" | sort >"$dir/cluster.env"

# Starts node $1 in the background and records its pid.
start_node() {
  local i=$1 port=$((first_port + $1)) nd="$dir/node$1"
  mkdir -p "$nd/data"
  # setsid: Ctrl-C reaches this script only, which then stops the nodes with SIGTERM.
  env "${node_env[@]}" ESYNC_HOST=127.0.0.1 ESYNC_PORT="$port" ESYNC_DATA_DIR="$nd/data" \
    setsid bun "$ROOT/packages/server/src/main.ts" >"$nd/log" 2>&1 &
  echo $! >"$nd/pid"
}
# Waits until node $1 answers /health with "healthy".
wait_node() {
  local i=$1 port=$((first_port + $1))
  for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"healthy"'; then return 0; fi
    kill -0 "$(cat "$dir/node$i/pid")" 2>/dev/null || { tail -n 20 "$dir/node$i/log" >&2; die "node $i exited"; }
    sleep 0.1
  done
  tail -n 20 "$dir/node$i/log" >&2
  die "node $i did not answer /health within 60 s"
}

# Node 0 first (it creates the bucket and migrates), then the others together.
start_node 0
wait_node 0
for i in $(seq 1 $((nodes - 1))); do start_node "$i"; done
for i in $(seq 1 $((nodes - 1))); do wait_node "$i"; done

echo "esync cluster: $nodes nodes, $db_text, bucket ${shared[ESYNC_S3_BUCKET]} at ${shared[ESYNC_S3_ENDPOINT]}"
for i in $(seq 0 $((nodes - 1))); do
  echo "  node $i: http://127.0.0.1:$((first_port + i))   (log: $dir/node$i/log)"
  echo "NODE_${i}_URL=http://127.0.0.1:$((first_port + i))" >>"$dir/cluster.env"
done
echo "Ctrl-C or 'scripts/cluster.sh stop --dir $dir' stops everything."

# Stay in the foreground until a node exits or we are told to stop.
pids=()
for i in $(seq 0 $((nodes - 1))); do pids+=("$(cat "$dir/node$i/pid")"); done
set +e
wait -n "${pids[@]}"
log "a node exited (see its log in $dir); stopping the cluster"
exit 1
