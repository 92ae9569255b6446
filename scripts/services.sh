#!/usr/bin/env bash
# Reuse the local PostgreSQL and Redis when they are running; start them (and
# install them from Debian's packages, if missing) when they are not. Only
# loopback addresses are used.
set -euo pipefail

log() { echo "services: $*" >&2; }

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

need_install=()
command -v pg_ctlcluster >/dev/null 2>&1 || need_install+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need_install+=(redis-server)
if [ ${#need_install[@]} -gt 0 ] && { ! command -v pg_isready >/dev/null 2>&1 || ! pg_up || ! command -v redis-cli >/dev/null 2>&1 || ! redis_up; }; then
  log "installing ${need_install[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need_install[@]}" >/dev/null
fi

if ! pg_up; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
  log "starting PostgreSQL ${ver}"
  pg_ctlcluster --skip-systemctl-redirect "${ver}" main start
  for _ in $(seq 1 50); do pg_up && break; sleep 0.2; done
  pg_up || { log "PostgreSQL did not start"; exit 1; }
fi
# A fresh install has no role for this user and no trust on loopback: add both.
if ! psql -h 127.0.0.1 -U root -d postgres -Atqc 'select 1' >/dev/null 2>&1 && command -v runuser >/dev/null 2>&1; then
  log "creating PostgreSQL role root"
  runuser -u postgres -- psql -qc "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='root') THEN CREATE ROLE root SUPERUSER LOGIN; END IF; END\$\$" || true
  hba=$(runuser -u postgres -- psql -Atqc 'show hba_file' 2>/dev/null || true)
  if [ -n "$hba" ] && ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    runuser -u postgres -- psql -qc 'select pg_reload_conf()' >/dev/null
  fi
fi

if ! redis_up; then
  log "starting Redis (no persistence, loopback only)"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 50); do redis_up && break; sleep 0.1; done
  redis_up || { log "Redis did not start"; exit 1; }
fi

# The database named by DATABASE_URL (default: carryover) must exist.
url=${DATABASE_URL:-postgres://root@127.0.0.1:5432/carryover?sslmode=disable}
db=$(sed -E 's#^[a-z]+://[^/]*/([^?]*).*#\1#' <<<"$url")
admin=$(sed -E "s#^([a-z]+://[^/]*/)[^?]*#\1postgres#" <<<"$url")
if [ -n "$db" ] && [ "$(psql "$admin" -Atqc "select 1 from pg_database where datname = '$db'" 2>/dev/null)" != "1" ]; then
  log "creating database $db"
  psql "$admin" -qc "CREATE DATABASE \"$db\"" >/dev/null
fi
log "PostgreSQL and Redis are up"
