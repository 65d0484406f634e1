#!/usr/bin/env bash
# A/B: two surveyd builds measured alternately on the same data dir, same machine, same minutes —
# the way to see a 5-10 % change on a machine whose run-to-run spread is larger than that.
#
#   Benchmarks/ab.sh BIN_A BIN_B [ROUNDS] [PHASE]     PHASE: submit (default) replay refusal read upload
#
# Uses the data dir and tokens a previous Benchmarks/run.sh left in $BENCH_DIR. Each round starts
# A, warms up 3 s, measures PHASE for $SECS s (8), stops it; then the same for B (B first in even
# rounds: use an even ROUNDS). Prints per round
# and in total: accepted/s and server CPU µs per request (from /proc), A then B. The servers run
# with --no-log unless LOG=1 (then the request log goes to $BENCH_DIR/ab-server.log, as in run.sh).
# DATA_A / DATA_B: a data dir per binary (default both $BENCH_DIR/data) — for A/B across a schema
# step, which an older binary refuses to open: copy the data dir the older one seeded, let B migrate
# its copy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
A=${1:?binary A}; B=${2:?binary B}; ROUNDS=${3:-4}; PHASE=${4:-submit}; SECS=${SECS:-8}
PORT=${PORT:-18080}; BASE="http://127.0.0.1:$PORT"
# shellcheck disable=SC1091
source "$WORK/env.sh"
export LUA_PATH="$HERE/wrk/?.lua;;" FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids-ab" THREADS=2 PHASE
export IDS_FILE="$WORK/read.ids" REVIEW_IDS_FILE="$WORK/review.ids" REVIEWER_TOKEN="$REVIEWER" TOKEN="$COLLECTOR"
case $PHASE in refusal) export ORG=$XORG VERSION=$XVERSION HASH=$XHASH TOKEN=$XCOLLECTOR ;; esac
mkdir -p "$OUT_DIR"; : > "$WORK/ab-server.log"
one() {  # binary tag data_dir -> "rate us_per_req"
    local logging=(--no-log); [ "${LOG:-0}" = 1 ] && logging=()
    "$1" serve --data-dir "$3" --port "$PORT" --startup-check quick "${logging[@]}" >> "$WORK/ab-server.log" 2>&1 &
    local pid=$!
    # The start-up check reads the whole file: minutes once ab runs have grown it to millions of rows.
    local waited=0
    until curl -sf "$BASE/healthz" > /dev/null 2>&1; do
        kill -0 $pid 2>/dev/null || { echo "ab: $1 exited at start-up (see $WORK/ab-server.log)" >&2; exit 1; }
        [ $waited -lt 6000 ] || { kill -9 $pid; echo "ab: $1 not healthy after 300 s" >&2; exit 1; }
        sleep 0.05; waited=$((waited + 1))
    done
    RUN_TAG="ab$2$(date +%s%N)" wrk -t2 -c64 -d3s -s "$HERE/wrk/$PHASE.lua" "$BASE" > /dev/null 2>&1
    local c0; c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
    local line; line=$(RUN_TAG="ab$2$(date +%s%N)" wrk -t2 -c64 -d"${SECS}s" -s "$HERE/wrk/$PHASE.lua" "$BASE" 2>&1 | grep '^RESULT')
    local c1; c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
    kill -TERM $pid; wait $pid || true
    local n rate; n=$(echo "$line" | sed 's/.* requests=\([0-9]*\).*/\1/'); rate=$(echo "$line" | sed 's/.* rps=\([0-9.]*\).*/\1/')
    awk -v r="$rate" -v t=$((c1 - c0)) -v h="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {printf "%.0f %.0f\n", r, t / h * 1e6 / n}'
}
ta=0; tb=0; ua=0; ub=0
for r in $(seq 1 "$ROUNDS"); do
    # The order turns: the second server of a round runs while the first one's writes still go to
    # disk (an A/A run gave the second 0.926x the first's rate, 2026-12-04).
    if [ $((r % 2)) = 1 ]; then
        read -r ra pa <<< "$(one "$A" a "${DATA_A:-$WORK/data}")"; read -r rb pb <<< "$(one "$B" b "${DATA_B:-$WORK/data}")"
    else
        read -r rb pb <<< "$(one "$B" b "${DATA_B:-$WORK/data}")"; read -r ra pa <<< "$(one "$A" a "${DATA_A:-$WORK/data}")"
    fi
    echo "round $r: A $ra/s ${pa}us   B $rb/s ${pb}us"
    ta=$((ta + ra)); tb=$((tb + rb)); ua=$((ua + pa)); ub=$((ub + pb))
done
echo "mean: A $((ta / ROUNDS))/s $((ua / ROUNDS))us   B $((tb / ROUNDS))/s $((ub / ROUNDS))us   B/A rate $(awk -v a=$ta -v b=$tb 'BEGIN {printf "%.3f", b / a}')"
