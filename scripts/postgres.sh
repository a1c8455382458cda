# A private PostgreSQL cluster for tests and benches: source this file, then
#
#   pg_start          # installs PostgreSQL when missing, starts a cluster in
#                     # a temporary folder on a free port of 127.0.0.1, and
#                     # exports ENGRAM_PG_URL (trust auth, user "engram",
#                     # database "postgres"); stopped by pg_stop
#   pg_stop           # stops it and removes its folder (idempotent)
#
# Nothing of the machine's own PostgreSQL service is used or touched: the
# cluster runs as the user running the script, or, for root (initdb refuses
# root), as the system user "postgres" (created when missing). Quiet when all
# goes well; on failure the server log is printed.

PG_DIR=""
PG_PID=""

# The folder holding initdb/pg_ctl: on PATH, pg_config's, or Debian's
# versioned folder; installs Debian's postgresql package when none.
pg_bindir() {
  local d
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
    return 0
  fi
  for d in $(pg_config --bindir 2>/dev/null) $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
  done
  return 1
}

pg_install() {
  pg_bindir >/dev/null && return 0
  echo "postgres: installing postgresql (apt)" >&2
  local sudo="" log
  [ "$(id -u)" = 0 ] || sudo="sudo"
  log=$(mktemp)
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  pg_bindir >/dev/null
}

pg_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

pg_start() {
  pg_install
  local bin port as=() log
  bin=$(pg_bindir)
  port=$(pg_free_port)
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/engram-pg.XXXXXX")
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    chown postgres "$PG_DIR"
    chmod 700 "$PG_DIR"
    as=(runuser -u postgres --)
  fi
  log="$PG_DIR/server.log"
  if ! "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -U engram --auth=trust -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 &&
    ! "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -U engram --auth=trust -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1; then
    cat "$PG_DIR/initdb.log" >&2
    return 1
  fi
  # fsync off: a test cluster that is thrown away (commits are still
  # transactional and visible to other connections the same way).
  if ! "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$log" -w -t 60 \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null; then
    cat "$log" >&2
    return 1
  fi
  PG_PID=$(head -1 "$PG_DIR/data/postmaster.pid")
  export ENGRAM_PG_URL="postgres://engram@127.0.0.1:$port/postgres"
  export ENGRAM_PG_BIN="$bin"
  # What a test needs to stop and start this cluster (the restart test).
  export ENGRAM_PG_DATA="$PG_DIR/data" ENGRAM_PG_LOG="$log" ENGRAM_PG_AS="${as[*]:+postgres}"
  export ENGRAM_PG_OPTS="-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
  echo "postgres: $("$bin/postgres" --version) on 127.0.0.1:$port"
}

pg_stop() {
  [[ -n "$PG_DIR" ]] || return 0
  local bin as=()
  bin=$(pg_bindir)
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 ||
    { [[ -n "$PG_PID" ]] && kill -9 "$PG_PID" 2>/dev/null; } || true
  rm -rf "$PG_DIR"
  PG_DIR=""
  PG_PID=""
}
