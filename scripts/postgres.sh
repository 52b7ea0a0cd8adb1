#!/usr/bin/env bash
# A throwaway PostgreSQL server for the integration tests of the sample store.
#
#   scripts/postgres.sh start [DIR]   initdb into DIR (default: a new temp dir), start the server on
#                                     127.0.0.1:<free port> (and a unix socket in DIR), trust auth
#                                     for the user "hss", create the database "hss_test"; write
#                                     DIR/env and print its lines, e.g.
#                                       export HSS_TEST_POSTGRES_URL=postgresql+psycopg://hss@127.0.0.1:PORT/hss_test
#                                       export HSS_TEST_POSTGRES_DIR=DIR
#                                     so `eval "$(scripts/postgres.sh start)"` or `source DIR/env` works.
#   scripts/postgres.sh stop DIR      stop that server and delete DIR.
#
# The binaries come from $PG_BIN, else the newest /usr/lib/postgresql/*/bin, else initdb on PATH.
# When PostgreSQL is absent and we are root (or have password-less sudo) it is installed with
# apt-get. initdb refuses to run as root, so as root the server runs as the `postgres` system user
# (created when missing). Messages go to stderr; only the export lines go to stdout.
set -euo pipefail

DB_USER=hss
DB_NAME=hss_test
MARKER=.hss-test-postgres

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

find_bin() {
  if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then echo "$PG_BIN"; return 0; fi
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v initdb)")"; return 0; fi
  return 1
}

install_postgres() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      die "PostgreSQL is not installed and we are not root: install it (apt-get install postgresql) or set PG_BIN"
    fi
  fi
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is unavailable; set PG_BIN"
  log "installing PostgreSQL with apt-get"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
}

free_port() {
  local python
  for python in python3 python; do
    if command -v "$python" >/dev/null 2>&1; then
      "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
      return 0
    fi
  done
  echo $((20000 + RANDOM % 30000))
}

# Run a PostgreSQL binary as the server's owner (ourselves unless we are root).
as_owner() {
  if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
  if command -v runuser >/dev/null 2>&1; then runuser -u "$PG_OWNER" -- "$@"; else
    su -s /bin/sh "$PG_OWNER" -c "$(printf '%q ' "$@")"
  fi
}

pick_owner() {
  PG_OWNER="$(id -un)"
  if [ "$(id -u)" -eq 0 ]; then
    PG_OWNER=postgres
    if ! id -u "$PG_OWNER" >/dev/null 2>&1; then
      log "creating the system user $PG_OWNER"
      useradd --system --no-create-home --shell /bin/sh "$PG_OWNER"
    fi
  fi
}

start() {
  local dir="${1:-}"
  local bin
  if ! bin="$(find_bin)"; then
    install_postgres
    bin="$(find_bin)" || die "PostgreSQL binaries not found after installing; set PG_BIN"
  fi
  pick_owner
  if [ -z "$dir" ]; then dir="$(mktemp -d "${TMPDIR:-/tmp}/hss-postgres.XXXXXX")"; fi
  mkdir -p "$dir"
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  dir="$(cd "$dir" && pwd)"
  touch "$dir/$MARKER"
  if [ "$(id -u)" -eq 0 ]; then chown "$PG_OWNER" "$dir"; fi
  chmod 700 "$dir"
  as_owner test -w "$dir" || die "$PG_OWNER cannot write $dir (is a parent directory private? set TMPDIR)"

  log "$("$bin/postgres" --version) from $bin, data in $dir (owner $PG_OWNER)"
  as_owner "$bin/initdb" -D "$dir/data" -U "$DB_USER" --auth=trust -E UTF8 --locale=C -N \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

  local port attempt started=0
  for attempt in 1 2 3; do
    port="$(free_port)"
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -s \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >&2; then
      started=1
      break
    fi
    log "start on port $port failed (attempt $attempt)"
  done
  if [ "$started" -ne 1 ]; then
    tail -n 20 "$dir/server.log" >&2 || true
    die "the server did not start"
  fi
  "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$DB_USER" "$DB_NAME" \
    || die "createdb failed (server log: $dir/server.log)"

  cat >"$dir/env" <<EOF
export HSS_TEST_POSTGRES_URL=postgresql+psycopg://$DB_USER@127.0.0.1:$port/$DB_NAME
export HSS_TEST_POSTGRES_DIR=$dir
EOF
  chmod 644 "$dir/env"
  log "ready on 127.0.0.1:$port (stop with: scripts/postgres.sh stop $dir)"
  cat "$dir/env"
}

stop() {
  local dir="${1:-${HSS_TEST_POSTGRES_DIR:-}}"
  [ -n "$dir" ] || die "usage: $0 stop DIR"
  [ -d "$dir" ] || return 0
  if [ -z "$(ls -A "$dir")" ]; then rmdir "$dir"; return 0; fi  # start failed before initdb
  [ -e "$dir/$MARKER" ] || die "$dir was not made by this script; not touching it"
  if [ -f "$dir/data/postmaster.pid" ]; then
    local bin
    bin="$(find_bin)" || die "PostgreSQL binaries not found; set PG_BIN"
    pick_owner
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 -s stop >&2 || log "pg_ctl stop failed"
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 start [DIR] | stop [DIR]" ;;
esac
