#!/usr/bin/env bash
# The OData feed on a survey of 100,000 responses with a repeat of 5 instances each (500,000
# repeat rows): a row, a page, a full read against the sqlite3 tool, and 4 feeds refreshing at
# once beside new submissions — one build, one data dir, the same minutes.
#
#   Benchmarks/odata.sh [BIN] [COUNT]    # BIN: default a release build made here (--scratch-path
#                                        # /tmp/bench-build); COUNT: responses (100,000); ~2 min
#
# Steps: a data dir with an organization, an admin, a collector and the survey of
# fixtures/make_views.py (views_data.sh: made through the CLI and the API, three responses sent
# through the API and compared with what is stored, then COUNT seeded by seed_responses.py with
# 1,000 different answers documents) · a server on it · odata_feed.py measure: `<set>?$top=1` of
# both entity sets, ROUNDS (5) times; a full read of each by nextLink pages of 1,000 rows, then
# its first, middle and last page again ROUNDS times; the main table read in full ROUNDS times
# alternating with `sqlite3 -json` of the same rows (the stored columns, in id order) to
# /dev/null → the ratio (floor time / feed time, sums of the rounds) · new submissions (wrk,
# 64 connections, SECS=20 s, the survey's answers) alone and beside FEEDS (4) clients each
# refreshing the feed (Submissions, then Submissions.members, in full, again and again), in the
# order alone, beside, beside, alone → the rate beside / alone; the server's RSS sampled every
# 0.1 s: idle, the most during submissions alone, the most beside the feeds.
#
# Environment: ROUNDS (5) SECS (20) FEEDS (4) PORT (18302) BENCH_DIR (default /tmp/surveyd-odata)
# SCRATCH (/tmp/bench-build). Results: $BENCH_DIR/results.txt; the data dir is removed on exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; COUNT=${2:-100000}
ROUNDS=${ROUNDS:-5}; SECS=${SECS:-20}; FEEDS=${FEEDS:-4}
WORK=${BENCH_DIR:-/tmp/surveyd-odata}
PORT=${PORT:-18302}
BASE="http://127.0.0.1:$PORT"
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
# shellcheck source=views_data.sh
source "$HERE/views_data.sh"
for tool in jq sqlite3 wrk; do command -v $tool > /dev/null || die "$tool is not installed"; done
fresh_bench_dir odata

SERVER_PID=
trap 'stop_server_and_cluster "$WORK"/data' EXIT

release_bin
rec "odata.sh $(date -u +%FT%TZ) bin=$BIN count=$COUNT rounds=$ROUNDS secs=$SECS feeds=$FEEDS" \
    "checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)"

log "making the data dir: $COUNT responses with 5 repeat instances each"
DATA="$WORK/data"
make_views_data_dir "$DATA" "$COUNT" 20

serve "$WORK/serve.log" --data-dir "$DATA"
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
rec "rss.idle_kb=$(rss)"
log "reading the feed"
python3 "$HERE/odata_feed.py" measure --port "$PORT" --token "$ADMIN" --org "$ORG" --survey "$SURVEY" --db "$DATA/surveyd.sqlite" \
    --rounds "$ROUNDS" | tee -a "$RESULTS"
rec "rss.after_reads_kb=$(rss)"

# New submissions alone and beside FEEDS refreshing feeds, alone, beside, beside, alone.
export LUA_PATH="$HERE/wrk/?.lua;;" FIXTURES="$WORK/fixtures" OUT_DIR="$WORK/ids" THREADS=2 TOKEN="$COLLECTOR" ORG VERSION HASH
mkdir -p "$OUT_DIR"
submit() {
    RUN_TAG="$1$(date +%s%N)" PHASE=$1 wrk -t2 -c64 -d"${SECS}s" --timeout 10s -s "$HERE/wrk/submit.lua" "$BASE" > "$WORK/wrk-$1.txt" 2>&1 || true
    grep '^RESULT' "$WORK/wrk-$1.txt" | sed 's/.* ok_rps=\([0-9.]*\).*/\1/'
}
sample_rss() { while true; do rss; sleep 0.1; done; }
ALONE_SUM=0; BESIDE_SUM=0
for phase in alone beside beside alone; do
    sample_rss > "$WORK/rss-$phase.samples" & SAMPLER=$!
    feeds=()
    if [ "$phase" = beside ]; then
        for i in $(seq "$FEEDS"); do
            python3 "$HERE/odata_feed.py" refresh --port "$PORT" --token "$ADMIN" --org "$ORG" --survey "$SURVEY" \
                --seconds "$SECS" --tables Submissions,Submissions.members > "$WORK/feed-$i.txt" &
            feeds+=($!)
        done
    fi
    rate=$(submit "$phase")
    [ -n "$rate" ] || { tail -5 "$WORK/wrk-$phase.txt"; die "wrk printed no RESULT"; }
    for f in "${feeds[@]}"; do wait "$f"; done
    kill "$SAMPLER"; wait "$SAMPLER" 2>/dev/null || true
    extra=""
    [ "$phase" = beside ] && extra=" feeds: $(for i in $(seq "$FEEDS"); do printf '[%s] ' "$(cat "$WORK/feed-$i.txt")"; done)"
    rec "submit.$phase per_s=$rate max_rss_kb=$(sort -n "$WORK/rss-$phase.samples" | tail -1) wal_bytes=$(stat -c %s "$DATA/surveyd.sqlite-wal" 2>/dev/null || echo 0)$extra"
    if [ "$phase" = alone ]; then ALONE_SUM=$(echo "$ALONE_SUM + $rate" | bc -l); else BESIDE_SUM=$(echo "$BESIDE_SUM + $rate" | bc -l); fi
done
rec "ratio.submit_beside_feeds_vs_alone=$(echo "scale=3; $BESIDE_SUM / $ALONE_SUM" | bc -l)"
rec "rss.idle_kb_after=$(rss) responses_now=$(sqlite3 "$DATA/surveyd.sqlite" "SELECT COUNT(*) FROM responses")"
stop
rec "results: $RESULTS"
