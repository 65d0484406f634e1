#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster on a Unix socket (no TCP), for tests and benchmarks:
#
#   scripts/pg_cluster.sh start DIR PORT    # prints the libpq URL; ~1.6 s
#   scripts/pg_cluster.sh stop DIR          # stops it (immediate) and removes DIR
#   scripts/pg_cluster.sh down DIR          # stops the server as a crash would (immediate), keeps DIR
#   scripts/pg_cluster.sh up DIR PORT       # starts the server of DIR again (after `down`)
#
# initdb refuses to run as root: as root, the cluster belongs to the `postgres` user (Debian's
# postgresql-15 package creates it; scripts/setup.sh installs it).
set -euo pipefail
BIN=/usr/lib/postgresql/15/bin
cmd=${1:?start or stop}; dir=${2:?directory}
as_postgres() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
case $cmd in
  start)
    port=${3:?port}
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_postgres "$BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale > "$dir/initdb.log" 2>&1
    as_postgres "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-k $dir -p $port -c listen_addresses='' -c max_connections=1000 ${PG_CLUSTER_OPTIONS:-}" -w start > /dev/null
    echo "postgresql:///postgres?host=$dir&port=$port&user=postgres"
    ;;
  down)
    as_postgres "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null
    ;;
  up)
    port=${3:?port}
    as_postgres "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-k $dir -p $port -c listen_addresses='' -c max_connections=1000 ${PG_CLUSTER_OPTIONS:-}" -w start > /dev/null
    ;;
  stop)
    as_postgres "$BIN/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start DIR PORT | stop DIR | down DIR | up DIR PORT" >&2; exit 2 ;;
esac
