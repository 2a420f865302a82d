#!/usr/bin/env bash
# Starts a throwaway S3 server for tests: a one-node Ceph cluster (one monitor, one bluestore
# OSD on a sparse file, no manager, authentication off) with the RADOS gateway (radosgw)
# listening on 127.0.0.1:PORT, and an S3 user with known keys.
#
# Usage: scripts/s3/start.sh DIR PORT [MON_PORT]
#   DIR       state directory (created; wiped on start; must be empty or made by this script)
#   PORT      S3 port on 127.0.0.1
#   MON_PORT  Ceph monitor port on 127.0.0.1 (default: first free port above PORT)
# Keys: $ESYNC_TEST_S3_ACCESS_KEY / $ESYNC_TEST_S3_SECRET_KEY, defaulting to the ones below,
# which test/support/s3-server.ts also defaults to. $ESYNC_TEST_S3_OSD_BYTES sizes the OSD's
# sparse block file (default 32 GiB; RGW returns deleted objects' space after about a minute).
#
# Re-running it on the same DIR first stops whatever an earlier run left there. When S3
# answers an authenticated request, it writes DIR/s3.env (ENDPOINT, ACCESS_KEY, SECRET_KEY,
# REGION) and prints the endpoint URL as the last line on stdout. Progress goes to stderr,
# daemon logs to DIR/log/. Stop with scripts/s3/stop.sh DIR. Needs scripts/s3/install.sh.
set -euo pipefail

DIR=${1:?usage: start.sh DIR PORT [MON_PORT]}
PORT=${2:?usage: start.sh DIR PORT [MON_PORT]}
MON_PORT=${3:-}
OSD_BYTES=${ESYNC_TEST_S3_OSD_BYTES:-34359738368}
ACCESS_KEY=${ESYNC_TEST_S3_ACCESS_KEY:-ESYNCTESTACCESSKEY}
SECRET_KEY=${ESYNC_TEST_S3_SECRET_KEY:-esync-test-secret-key}
REGION=us-east-1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
T0=${EPOCHREALTIME/[.,]/}

log() {
  local now=${EPOCHREALTIME/[.,]/}
  printf "s3/start [%3d.%ds] %s\n" $(((now - T0) / 1000000)) $(((now - T0) % 1000000 / 100000)) "$*" >&2
}
die() {
  echo "s3/start: $*" >&2
  for f in "$DIR"/log/*.log; do [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 15 "$f" >&2; }; done
  "$HERE/stop.sh" "$DIR" >&2
  exit 1
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for cmd in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool uuidgen curl setsid; do
  command -v "$cmd" >/dev/null || die "$cmd not found: run scripts/s3/install.sh (as root)"
done
[[ $PORT =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$PORT'"
[[ $OSD_BYTES =~ ^[0-9]+$ ]] || die "ESYNC_TEST_S3_OSD_BYTES must be a number of bytes, got '$OSD_BYTES'"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# Refuse to wipe a directory this script did not make.
if [ -n "$(ls -A "$DIR")" ] && [ ! -f "$DIR/.esync-s3" ]; then
  die "$DIR is not empty and was not made by this script; refusing to wipe it"
fi
"$HERE/stop.sh" "$DIR" >&2
rm -rf "${DIR:?}"/{mon,osd,rgw,run,log,pids,crash,ceph.conf,monmap,s3.env}
mkdir -p "$DIR"/{mon,osd/ceph-0,rgw,run,log,pids,crash}
touch "$DIR/.esync-s3"

port_busy "$PORT" && die "port $PORT on 127.0.0.1 is already in use"
if [ -z "$MON_PORT" ]; then
  MON_PORT=$((PORT + 1))
  while port_busy "$MON_PORT"; do MON_PORT=$((MON_PORT + 1)); done
fi
port_busy "$MON_PORT" && die "monitor port $MON_PORT on 127.0.0.1 is already in use"

FSID=$(uuidgen)
CONF="$DIR/ceph.conf"
cat >"$CONF" <<CONF
[global]
fsid = $FSID
# Clients find the monitor through the monmap file, which carries the cluster fsid (with
# mon_host alone a daemon's first command can race the monmap and fail with "wrong fsid").
monmap = $DIR/monmap
# Messenger v1 only: with auth none, radosgw fails to authenticate over msgr2 (-EACCES).
ms_bind_msgr2 = false
public_network = 127.0.0.0/8
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $DIR/run
admin_socket = $DIR/run/\$name.asok
log_file = $DIR/log/\$name.log
crash_dir = $DIR/crash
# One OSD: pools of size 1, placement across OSDs rather than hosts.
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_max_pg_per_osd = 1000
mon_data_avail_warn = 2
mon_data_avail_crit = 1
debug_ms = 0
debug_rgw = 0

[mon]
mon_data = $DIR/mon/ceph-\$id
# Commit monitor changes (new pools, OSD state) sooner than the default 1 s: faster start.
paxos_propose_interval = 0.1

[osd]
osd_data = $DIR/osd/ceph-\$id
osd_objectstore = bluestore
# A sparse file (32 GiB unless told); only what is written takes disk space.
bluestore_block_path = $DIR/osd/ceph-\$id/block.file
bluestore_block_size = $OSD_BYTES
bluestore_block_create = true
osd_memory_target = 1073741824
# The OSD would set its CRUSH location itself with a mon command sent before it has the
# monmap (same fsid race); this script places it in CRUSH before starting it instead.
osd_class_update_on_start = false
osd_crush_update_on_start = false

[client.rgw.esync]
# tcp_nodelay: without it, small answers (ListObjects, GET of a small object, DeleteObjects) wait
# ~40 ms for a delayed ACK (Nagle), which dominates the S3 pass of the test suite.
rgw_frontends = beast endpoint=127.0.0.1:$PORT tcp_nodelay=1
rgw_data = $DIR/rgw
rgw_enable_usage_log = false
# Space of deleted objects goes back to the OSD within a minute or two instead of after the
# default two hours: a whole test run deletes far more than the OSD holds.
rgw_gc_obj_min_wait = 30
rgw_gc_processor_period = 30
rgw_gc_processor_max_time = 30
CONF

# Each daemon runs in the foreground (-f) in a session of its own, so it outlives this
# script and its caller's process group; DIR/pids/NAME holds its process id for stop.sh.
daemon() {
  local name=$1
  shift
  setsid "$@" -c "$CONF" -f </dev/null >>"$DIR/log/$name.out" 2>&1 &
  echo $! >"$DIR/pids/$name"
}
alive() { kill -0 "$(cat "$DIR/pids/$1")" 2>/dev/null; }
CEPH=(ceph -c "$CONF" --connect-timeout 10)
# With auth none, a client's first monitor command can race the monmap and be refused with
# "wrong fsid"; every command used here is idempotent, so retry it a few times.
retry() {
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    timeout 30 "$@" && return 0
    sleep 0.3
  done
  return 1
}

log "monitor on 127.0.0.1:$MON_PORT"
monmaptool --create --fsid "$FSID" --addv a "[v1:127.0.0.1:$MON_PORT]" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" >/dev/null 2>&1 || die "ceph-mon --mkfs failed"
daemon mon ceph-mon -i a

OSD_UUID=$(uuidgen)
OSD_ID=$(retry "${CEPH[@]}" osd new "$OSD_UUID" 2>/dev/null) || die "monitor did not answer 'osd new'"
[ "$OSD_ID" = 0 ] || die "expected OSD id 0, got '$OSD_ID'"
log "OSD mkfs"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/osd-mkfs.out" 2>&1 || die "ceph-osd --mkfs failed"
retry "${CEPH[@]}" osd crush add osd.0 1.0 root=default >/dev/null 2>&1 || die "osd crush add failed"
daemon osd ceph-osd -i 0

log "waiting for the OSD"
up=""
while [ "$SECONDS" -lt 90 ]; do
  alive osd || die "ceph-osd exited"
  if timeout 10 "${CEPH[@]}" osd stat 2>/dev/null | grep -q "1 up"; then up=1 && break; fi
  sleep 0.25
done
[ -n "$up" ] || die "OSD did not come up"

log "radosgw on 127.0.0.1:$PORT"
daemon rgw radosgw -n client.rgw.esync
ready=""
restarts=0
while [ "$SECONDS" -lt 150 ]; do
  if ! alive rgw; then
    # It creates its pools at start-up, and can lose the same race; start it again.
    restarts=$((restarts + 1))
    [ "$restarts" -le 3 ] || die "radosgw exited"
    log "radosgw exited; starting it again"
    daemon rgw radosgw -n client.rgw.esync
  fi
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then ready=1 && break; fi
  sleep 0.25
done
[ -n "$ready" ] || die "radosgw did not answer on port $PORT"

log "creating the test user"
retry radosgw-admin -c "$CONF" user create --uid=esync-test --display-name="esync tests" \
  --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null 2>>"$DIR/log/radosgw-admin.out" ||
  radosgw-admin -c "$CONF" user info --uid=esync-test 2>/dev/null | grep -qF "\"$ACCESS_KEY\"" ||
  die "radosgw-admin user create failed"

EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
# Ready means an authenticated ListBuckets succeeds with the test keys (not just any answer).
ok=""
while [ "$SECONDS" -lt 180 ]; do
  if curl -sf --max-time 5 --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
    -H "x-amz-content-sha256: $EMPTY_SHA256" "http://127.0.0.1:$PORT/" 2>/dev/null | grep -q "<ID>esync-test</ID>"; then ok=1 && break; fi
  sleep 0.25
done
[ -n "$ok" ] || die "S3 did not accept the test keys on port $PORT"

cat >"$DIR/s3.env.tmp" <<ENV
ENDPOINT=http://127.0.0.1:$PORT
ACCESS_KEY=$ACCESS_KEY
SECRET_KEY=$SECRET_KEY
REGION=$REGION
ENV
mv "$DIR/s3.env.tmp" "$DIR/s3.env"
log "ready"
echo "http://127.0.0.1:$PORT"
