#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster for tests and development: initdb in DIR/data, the
# server listening on 127.0.0.1:PORT only (no Unix socket outside DIR), trust authentication
# for the `postgres` superuser, fsync and synchronous commit off (the data is thrown away).
# Collation is C (byte order, as SQLite compares text), character classes C.UTF-8 (pg_trgm
# sees non-ASCII letters as letters). The contrib extensions (pg_trgm) can be created.
#
# Usage: scripts/pg/start.sh DIR [PORT]
#   DIR   state directory (created; wiped on start; must be empty or made by this script)
#   PORT  port on 127.0.0.1 (default: the first free one from 15432 on)
#
# PostgreSQL refuses to run as root: as root, the server runs as the system user
# $ESYNC_PG_USER (default esync-pg, created when missing), which then owns DIR; DIR's
# parent directories must let that user through (/tmp does). As any other user it runs as
# that user. Re-running it on the same DIR first stops whatever an earlier run left there.
# When the server accepts connections it writes DIR/pg.env (URL=…) and prints the URL as the
# last line on stdout; progress goes to stderr, the server log to DIR/log/postgres.log.
# Stop with scripts/pg/stop.sh DIR. Needs scripts/pg/install.sh.
set -euo pipefail

DIR=${1:?usage: start.sh DIR [PORT]}
PORT=${2:-}
PG_USER=${ESYNC_PG_USER:-esync-pg}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "pg/start: $*" >&2; }
die() {
  echo "pg/start: $*" >&2
  [ -f "${DIR:-}/log/postgres.log" ] && { echo "--- tail $DIR/log/postgres.log" >&2; tail -n 20 "$DIR/log/postgres.log" >&2; }
  exit 1
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -n "$BIN" ] && [ -x "$BIN/initdb" ] || die "PostgreSQL not found in /usr/lib/postgresql: run scripts/pg/install.sh (as root)"

if [ -z "$PORT" ]; then
  PORT=15432
  while port_busy "$PORT"; do PORT=$((PORT + 1)); done
fi
[[ $PORT =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$PORT'"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# Refuse to wipe a directory this script did not make.
if [ -n "$(ls -A "$DIR")" ] && [ ! -f "$DIR/.esync-pg" ]; then
  die "$DIR is not empty and was not made by this script; refusing to wipe it"
fi
"$HERE/stop.sh" "$DIR" >&2
rm -rf "${DIR:?}"/{data,run,log,pg.env}
mkdir -p "$DIR"/{run,log}
touch "$DIR/.esync-pg"
port_busy "$PORT" && die "port $PORT on 127.0.0.1 is already in use"

# as_user CMD...: runs CMD as the server's user (root: $PG_USER; otherwise ourselves).
if [ "$(id -u)" -eq 0 ]; then
  if ! id "$PG_USER" >/dev/null 2>&1; then
    log "creating system user $PG_USER"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER" ||
      id "$PG_USER" >/dev/null 2>&1 || die "could not create user $PG_USER"
  fi
  chown -R "$PG_USER:" "$DIR"
  as_user() { setpriv --reuid="$PG_USER" --regid="$(id -g "$PG_USER")" --init-groups -- "$@"; }
else
  as_user() { "$@"; }
fi
as_user test -w "$DIR" || die "user $PG_USER cannot write $DIR (do its parent directories let it through?)"

log "initdb in $DIR/data ($BIN)"
as_user "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --encoding=UTF8 \
  --lc-collate=C --lc-ctype=C.UTF-8 --lc-messages=C --no-sync >"$DIR/log/initdb.log" 2>&1 ||
  { cat "$DIR/log/initdb.log" >&2; die "initdb failed"; }
cat >>"$DIR/data/postgresql.conf" <<CONF
# scripts/pg/start.sh: a throw-away test cluster
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR/run'
max_connections = 400
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 128MB
log_min_messages = warning
log_min_error_statement = panic
log_line_prefix = '%m [%p] '
CONF

log "starting the server on 127.0.0.1:$PORT"
# setsid: the server outlives this script and its caller's process group.
as_user setsid "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log/postgres.log" -w -t 60 start >/dev/null ||
  die "pg_ctl start failed"

URL="postgres://postgres@127.0.0.1:$PORT/postgres"
ok=""
for _ in $(seq 1 100); do
  if "$BIN/psql" "$URL" -XAtqc "SELECT 1" >/dev/null 2>&1; then ok=1 && break; fi
  sleep 0.1
done
[ -n "$ok" ] || die "the server does not accept connections on port $PORT"
"$BIN/psql" "$URL" -XAtqc "SELECT name FROM pg_available_extensions WHERE name = 'pg_trgm'" | grep -q pg_trgm ||
  die "the pg_trgm extension is not available (install postgresql-contrib)"

echo "URL=$URL" >"$DIR/pg.env.tmp"
mv "$DIR/pg.env.tmp" "$DIR/pg.env"
log "ready"
echo "$URL"
