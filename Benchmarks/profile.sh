#!/usr/bin/env bash
# Where the time goes in one benchmark phase: perf record (cpu-clock, call graphs) of the server
# while wrk runs the phase against the data dir a previous run.sh left behind.
#
#   Benchmarks/profile.sh PHASE [SECONDS]     PHASE: submit replay refusal read mix upload
#
# Uses $BENCH_DIR (default /tmp/surveyd-bench): its data dir, env.sh and read/review id files.
# Prints the wrk RESULT line, the busiest threads and the top symbols (self time, demangled);
# the perf data stays in $BENCH_DIR/perf-PHASE.data. Numbers under perf are a little lower.
# SCRATCH picks the build, SERVER_ARGS adds `surveyd serve` flags (e.g. --http-threads 0),
# WARMUP seconds of the same load run first, unprofiled (4; 0 for none).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
SCRATCH=${SCRATCH:-/tmp/bench-build}
BIN="$SCRATCH/release/surveyd"
PORT=${PORT:-18080}
PHASE=${1:?phase: submit replay refusal read mix upload}
SECS=${2:-10}
export PATH="/opt/swift/usr/bin:$PATH" LUA_PATH="$HERE/wrk/?.lua;;"
command -v perf >/dev/null || apt-get install -y linux-perf >/dev/null
# shellcheck disable=SC1091
source "$WORK/env.sh"
export FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids-profile" RUN_TAG="p$(date +%s)" THREADS=${THREADS:-2} PHASE
export IDS_FILE="$WORK/read.ids" REVIEW_IDS_FILE="$WORK/review.ids" REVIEWER_TOKEN="$REVIEWER" TOKEN="$COLLECTOR"
mkdir -p "$OUT_DIR"
case $PHASE in
    submit|mix) script=$PHASE.lua ;;
    replay) script=replay.lua ;;
    refusal) script=refusal.lua; export ORG=$XORG VERSION=$XVERSION HASH=$XHASH TOKEN=$XCOLLECTOR ;;
    read) script=read.lua ;;
    upload) script=upload.lua ;;
    *) echo "unknown phase $PHASE" >&2; exit 2 ;;
esac

# A server from a previous run may still be finishing its clean stop on this port.
for _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" || break; sleep 0.2; done
# shellcheck disable=SC2086
"$BIN" serve --data-dir "$WORK/data" --port "$PORT" --startup-check quick ${SERVER_ARGS:-} > "$WORK/profile-server.log" 2> "$WORK/profile-server.err" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 6000); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done   # start-up runs quick_check
kill -0 "$PID" 2>/dev/null || { cat "$WORK/profile-server.err" >&2; echo "profile: the server did not start" >&2; exit 1; }
sync; sleep 1
# Warm-up, not profiled: caches and the WAL file after a restart.
if [ "${WARMUP:-4}" != 0 ]; then
    PHASE=warmup wrk -t"$THREADS" -c"${CONNECTIONS:-64}" -d"${WARMUP:-4}s" -s "$HERE/wrk/$script" "http://127.0.0.1:$PORT" > /dev/null
fi
perf record -F 999 -g -p "$PID" -o "$WORK/perf-$PHASE.data" > /dev/null 2>&1 &
PP=$!
sleep 0.3
wrk -t"$THREADS" -c"${CONNECTIONS:-64}" -d"${SECS}s" -s "$HERE/wrk/$script" "http://127.0.0.1:$PORT" | grep '^RESULT'
kill -INT $PP; wait $PP || true
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else swift demangle --simplified 2>/dev/null || cat; fi; }
R=(perf report -i "$WORK/perf-$PHASE.data" --stdio -g none)
clean() { grep -v '^#' | grep -v '^$' | demangle | sed 's/ \{2,\}/ /g' | cut -c1-170; }
echo "--- threads (share of samples)"
"${R[@]}" --no-children --sort comm 2>/dev/null | clean | head -8 || true
echo "--- by library (self time)"
"${R[@]}" --no-children --sort dso 2>/dev/null | clean | head -12 || true
echo "--- top symbols, self time"
"${R[@]}" --no-children --sort dso,symbol 2>/dev/null | clean | head -"${TOP:-30}" || true
echo "--- top functions, inclusive time (children)"
"${R[@]}" --children --sort symbol 2>/dev/null | clean | grep -v '\[k\]' | head -"${TOP:-30}" || true
