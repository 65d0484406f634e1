#!/usr/bin/env bash
# The console's Data and Summary views of a survey of 1,000,000 responses (and of a smaller one,
# to show how the time grows): a data page (first, middle, last) and the summary of 10 select
# and 5 number questions, with the server's RSS — one build, the same minutes.
#
#   Benchmarks/dataviews.sh [BIN] [COUNTS]    # BIN: default a release build made here
#                                             # (--scratch-path /tmp/bench-build); COUNTS: the
#                                             # surveys' sizes, smallest first ("100000 1000000")
#
# Steps, for each size N of COUNTS: a data dir with an organization, an admin, a collector and the
# survey of fixtures/make_views.py (views_data.sh: made through the CLI and the API, three
# responses sent through the API and compared with what is stored, then N seeded by
# seed_responses.py from 1,000 different answers documents, one every SPACING_MS (500: a
# million over six days) · a server on it · dataviews_pages.py, signed in with the admin's token:
# the Data view at 50 and 250 rows a page, its first, middle and last page, ROUNDS (7) times each,
# each checked for the rows and the newest response it must show; the Summary SUMMARY_ROUNDS (3)
# times, the server's RSS read every 20 ms → median ms per page; the summary's time per 100,000
# responses for each size, and the largest size's time over the smallest's. The data dir is
# removed before the next size.
#
# Environment: ROUNDS (7) SUMMARY_ROUNDS (3) SPACING_MS (500) PORT (18303)
# BENCH_DIR (default /tmp/surveyd-dataviews) SCRATCH (/tmp/bench-build). Results:
# $BENCH_DIR/results.txt; the data dirs are removed on exit, also on failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; COUNTS=${2:-100000 1000000}
ROUNDS=${ROUNDS:-7}; SUMMARY_ROUNDS=${SUMMARY_ROUNDS:-3}; SPACING_MS=${SPACING_MS:-500}
WORK=${BENCH_DIR:-/tmp/surveyd-dataviews}
PORT=${PORT:-18303}
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
# shellcheck source=views_data.sh
source "$HERE/views_data.sh"
for tool in jq sqlite3; do command -v $tool > /dev/null || die "$tool is not installed"; done
fresh_bench_dir dataviews

SERVER_PID=
trap 'stop_server_and_cluster "$WORK"/data-*' EXIT

release_bin
rec "dataviews.sh $(date -u +%FT%TZ) bin=$BIN counts=$COUNTS rounds=$ROUNDS summary_rounds=$SUMMARY_ROUNDS" \
    "checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)"

for n in $COUNTS; do
    log "making the data dir: $n responses"
    DATA="$WORK/data-$n"
    make_views_data_dir "$DATA" "$n" "$SPACING_MS"
    started=$(date +%s.%N)
    serve "$WORK/serve-$n.log" --data-dir "$DATA"
    rec "n=$n start_s=$(python3 -c "print(f'{$(date +%s.%N) - $started:.2f}')")"
    python3 "$HERE/dataviews_pages.py" --port "$PORT" --token "$ADMIN" --org "$ORG" --survey "$SURVEY" --db "$DATA/surveyd.sqlite" \
        --pid "$SERVER_PID" --rounds "$ROUNDS" --summary-rounds "$SUMMARY_ROUNDS" | sed -u "s/^/n=$n /" | tee -a "$RESULTS"
    stop
    rm -rf "$DATA"
done
rec "== the summary's median per 100,000 responses"
awk '/ summary: median_ms=/ { n = $1; sub(/n=/, "", n); ms = $0; sub(/.*median_ms=/, "", ms); sub(/ .*/, "", ms)
     printf "  n=%s summary %.0f ms = %.0f ms per 100,000\n", n, ms, ms * 100000 / n
     if (first == "") { first = ms; fn = n } last = ms; ln = n }
     END { if (ln != fn) printf "  summary n=%s / n=%s: %.2fx the time for %.2fx the responses\n", ln, fn, last / first, ln / fn }' "$RESULTS" | tee -a "$RESULTS"
rec "results: $RESULTS"
