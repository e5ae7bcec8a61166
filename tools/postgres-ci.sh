#!/usr/bin/env bash
# A PostgreSQL server of its own for CI, so that the course service's tests run on
# PostgreSQL as well as SQLite (grader/tests/test_course_service.py::test_the_service_on_postgresql):
#
#   eval "$(bash tools/postgres-ci.sh start)"   # installs and starts it; prints `export CUDALAB_POSTGRES_URL=...`
#   bash tools/postgres-ci.sh stop              # stops what start started, removes its folder
#
# What it runs: Debian's postgresql binaries, a cluster made by initdb as the postgres user
# in $CUDALAB_POSTGRES_CI_DIR (default /tmp/cudalab-postgres-ci), listening on 127.0.0.1 only
# at a free port, with one role and one database (cudalab) whose password is made at random
# here. A server the machine already runs is left alone.
set -euo pipefail
dir="${CUDALAB_POSTGRES_CI_DIR:-/tmp/cudalab-postgres-ci}"

say() { printf 'postgres-ci: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The newest installed server's binaries (Debian keeps them under /usr/lib/postgresql/<version>/bin).
bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install_packages() {
  [ -n "$(bin_dir)" ] && [ -x "$(bin_dir)/pg_ctl" ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and there is no apt-get: install postgresql first"
  say "installing postgresql"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

as_postgres() { runuser -u postgres -- "$@"; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  [ "$(id -u)" -eq 0 ] || die "run it as root (it installs packages and runs the server as the postgres user)"
  install_packages
  id postgres >/dev/null 2>&1 || die "there is no postgres user: the postgresql package makes it"
  local bin port password
  bin="$(bin_dir)"
  [ -e "$dir" ] && stop 2>/dev/null
  mkdir -p "$dir"
  chown postgres: "$dir"
  chmod 700 "$dir"
  port="$(free_port)"
  password="$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
  printf '%s\n' "$password" >"$dir/password"
  chown postgres: "$dir/password"
  as_postgres "$bin/initdb" -D "$dir/data" -A scram-sha-256 -U postgres --pwfile="$dir/password" >"$dir/initdb.log" 2>&1 \
    || die "initdb failed (see $dir/initdb.log)"
  as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir" start >/dev/null \
    || die "the server did not start (see $dir/server.log)"
  PGPASSWORD="$password" as_postgres psql -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE cudalab LOGIN PASSWORD '$password'" -c "CREATE DATABASE cudalab OWNER cudalab" >/dev/null \
    || die "could not make the cudalab role and database (see $dir/server.log)"
  say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') answers on 127.0.0.1:$port"
  echo "export CUDALAB_POSTGRES_URL=postgresql+psycopg://cudalab:$password@127.0.0.1:$port/cudalab"
}

stop() {
  local bin
  bin="$(bin_dir)"
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: bash tools/postgres-ci.sh start|stop" >&2; exit 2 ;;
esac
