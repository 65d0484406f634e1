#!/usr/bin/env bash
# The reliability harness, short forms: chaos (10 kill -9 cycles), chaos on PostgreSQL (three
# processes on one throwaway PostgreSQL 15 cluster: 8 cycles of kill -9 and cut connections, one
# PostgreSQL restart and one outage), the fault proxy, abuse (slowloris, 10,000 malformed requests,
# a full disk, a corrupted database) and the cross-tenant matrix, and 200 wrong sign-ins at once
# (memory bounded). Exits non-zero on any failure and ends with one `N passed, M failed` line.
#
#   Harness/run_all.sh                        # uses .build/debug/surveyd
#   SURVEYD_BIN=/path/to/surveyd Harness/run_all.sh
#   HARNESS_ONLY="chaos tenancy" Harness/run_all.sh
#
# Everything talks to 127.0.0.1 only. The full-disk test mounts a 20 MiB tmpfs (needs root; it
# is reported as failed otherwise). chaos-postgres needs PostgreSQL 15 and psql (scripts/setup.sh
# installs them); its cluster listens on a Unix socket only, named after port
# HARNESS_PG_PORT (default 54369). Python 3.11 standard library only.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
export SURVEYD_BIN="${SURVEYD_BIN:-$ROOT/.build/debug/surveyd}"
case "$SURVEYD_BIN" in /*) ;; *) SURVEYD_BIN="$ROOT/$SURVEYD_BIN" ;; esac
if [ ! -x "$SURVEYD_BIN" ]; then
  echo "run_all: no surveyd binary at $SURVEYD_BIN (build it, or set SURVEYD_BIN)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
PY="${PYTHON:-python3}"
export HARNESS_WORK_DIR="${HARNESS_WORK_DIR:-$(mktemp -d /tmp/surveyd-harness.XXXXXX)}"
mkdir -p "$HARNESS_WORK_DIR"
SEED="${HARNESS_SEED:-$(( $(date +%s) % 100000 ))}"
ONLY="${HARNESS_ONLY:-chaos chaos-postgres faults abuse tenancy flood}"
echo "run_all: surveyd $SURVEYD_BIN; work dir $HARNESS_WORK_DIR; seed $SEED"

passed=0
failed=0
status=0
start=$(date +%s)
run() {
  local name="$1"; shift
  local log="$HARNESS_WORK_DIR/$name.out"
  local t0=$(date +%s)
  echo "=== $name: $*"
  # Each part is bounded in time; a hang counts as a failure.
  timeout --kill-after=10 "${HARNESS_PART_TIMEOUT:-240}" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  else
    failed=$((failed + 1))
    echo "run_all: $name ended without a summary (exit $rc)"
  fi
  if [ "$rc" -ne 0 ]; then status=1; fi
  echo "=== $name: exit $rc in $(( $(date +%s) - t0 ))s"
}

for part in $ONLY; do
  case "$part" in
    chaos)   run chaos   "$PY" Harness/chaos.py --cycles 10 --seed "$SEED" --json-out "$HARNESS_WORK_DIR/chaos.json" ;;
    chaos-postgres)
             run chaos-postgres "$PY" Harness/chaos_postgres.py --cycles 8 --pg-restarts 1 --pg-outages 1 \
               --pg-port "${HARNESS_PG_PORT:-54369}" --seed "$SEED" --json-out "$HARNESS_WORK_DIR/chaos-postgres.json" ;;
    faults)  run faults  "$PY" Harness/test_faults.py --seed "$SEED" ;;
    abuse)   run abuse   "$PY" Harness/abuse.py --seed "$SEED" --json-out "$HARNESS_WORK_DIR/abuse.json" ;;
    tenancy) run tenancy "$PY" Harness/tenancy.py ;;
    flood)   run flood   "$PY" Harness/signin_flood.py ;;
    *) echo "run_all: unknown part $part"; failed=$((failed + 1)); status=1 ;;
  esac
done

# Leftovers of a part that was cut off by its time bound: its servers (by the pids it recorded,
# and only if they are still surveyd processes) and its tmpfs mount.
if [ -d "$HARNESS_WORK_DIR/pids" ]; then
  for f in "$HARNESS_WORK_DIR"/pids/*; do
    [ -e "$f" ] || continue
    pid=$(basename "$f")
    if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "surveyd serve"; then
      echo "run_all: killing leftover surveyd $pid"; kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
fi
# ...and the PostgreSQL clusters and connection-cutting proxies of a cut-off chaos-postgres.
if [ -d "$HARNESS_WORK_DIR/pg-clusters" ]; then
  for f in "$HARNESS_WORK_DIR"/pg-clusters/*; do
    [ -e "$f" ] || continue
    dir=$(sed -n 1p "$f"); pid=$(sed -n 2p "$f")
    if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "fault_proxy.py --cut"; then
      echo "run_all: stopping leftover proxy $pid"; kill "$pid" 2>/dev/null || true
    fi
    case "$dir" in
      /tmp/surveyd-chaos-pg.*) echo "run_all: removing leftover cluster $dir"; ./scripts/pg_cluster.sh stop "$dir" ;;
    esac
    rm -f "$f"
  done
fi
grep -o " $HARNESS_WORK_DIR/tmpfs-[^ ]*" /proc/mounts 2>/dev/null | while read -r m; do
  echo "run_all: unmounting leftover $m"; umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
done

echo "run_all: $(( $(date +%s) - start ))s; logs in $HARNESS_WORK_DIR"
if [ "$failed" -gt 0 ]; then status=1; fi
if [ "$status" -eq 0 ] && [ -z "${HARNESS_KEEP:-}" ]; then rm -rf "$HARNESS_WORK_DIR"; fi
echo "$passed passed, $failed failed"
exit $status
