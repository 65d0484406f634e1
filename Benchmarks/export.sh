#!/usr/bin/env bash
# The export benchmark: a CSV export of 1,000,000 stored responses against the sqlite3 command-line
# tool writing the same rows' stored columns as CSV (the floor), the server's RSS throughout, and
# new submissions with and without an export running beside them — all in one run, as ratios.
#
#   QUICK=1 Benchmarks/run.sh        # once: builds, seeds $BENCH_DIR (org, users, survey, tokens)
#   Benchmarks/export.sh             # ~5 minutes; numbers in $BENCH_DIR/export-results.txt
#
# It copies $BENCH_DIR/data to $BENCH_DIR/export-data, tops it up to $COUNT responses of the
# benchmark survey (seed_responses.py; the server stopped), then:
#   1. floor: `sqlite3 -csv` selects the stored columns of those rows in id order;
#   2. export: `curl …/responses.csv`, the server's RSS sampled every 0.1 s — alternating with
#      the floor $ROUNDS times, both to /dev/null, then once both to files;
#   3. submissions: wrk submit.lua for $SECS s alone, then $SECS s with exports running back to
#      back beside it; the WAL's size is recorded after each (a long read snapshot stops the
#      checkpointer from restarting the WAL, so it grows while submissions continue).
# Environment: BENCH_DIR (/tmp/surveyd-bench) SCRATCH (/tmp/bench-build) COUNT (1000000) SECS (20) PORT (18080) ROUNDS (3)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
SCRATCH=${SCRATCH:-/tmp/bench-build}
COUNT=${COUNT:-1000000}
SECS=${SECS:-20}
PORT=${PORT:-18080}
BASE="http://127.0.0.1:$PORT"
export PATH="/opt/swift/usr/bin:$PATH"
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
[ -f "$WORK/env.sh" ] || { log "no $WORK/env.sh: run QUICK=1 Benchmarks/run.sh first"; exit 1; }
# shellcheck disable=SC1091
source "$WORK/env.sh"
RESULTS="$WORK/export-results.txt"
: > "$RESULTS"
rec() { echo "$*" | tee -a "$RESULTS"; }

log "building release"
swift build -c release --package-path "$ROOT" --scratch-path "$SCRATCH" --product surveyd > "$WORK/export-build.log" 2>&1
BIN="$SCRATCH/release/surveyd"

DATA="$WORK/export-data"
rm -rf "$DATA"
cp -a "$WORK/data" "$DATA"
rm -f "$DATA/surveyd.lock" "$DATA/.lock"
STORED=$(sqlite3 "$DATA/surveyd.sqlite" "SELECT COUNT(*) FROM responses WHERE survey_id = '$SURVEY'")
if [ "$STORED" -lt "$COUNT" ]; then
    log "seeding $((COUNT - STORED)) responses"
    python3 "$HERE/seed_responses.py" --db "$DATA/surveyd.sqlite" --org "$ORG" --survey "$SURVEY" --version "$VERSION" \
        --submitter "$COLLECTOR_ID" --answers "$HERE/fixtures/answers.json" --content-hash "$HASH" --count "$((COUNT - STORED))" \
        --review-state submitted --end-ago-s 3600 --spacing-ms 1 > /dev/null
fi
ROWS=$(sqlite3 "$DATA/surveyd.sqlite" "SELECT COUNT(*) FROM responses WHERE org_id = '$ORG' AND survey_id = '$SURVEY'")
rec "rows=$ROWS"

# 1 and 2, alternately ($ROUNDS times): the floor — the stored columns as CSV by the sqlite3
# tool — and the server's CSV export, both to /dev/null (the strict comparison: the tool pays
# nothing for its output, the server pays the loopback socket); then once more both to files
# on the same disk (what a user running either does). The server's RSS is sampled every 0.1 s
# throughout every export.
FLOOR_SQL="SELECT response_id, client_submission_id, survey_version_id, submitter, received_at, captured_at, review_state, revision, field_task_id, answers FROM responses WHERE org_id = '$ORG' AND survey_id = '$SURVEY' ORDER BY response_id"
floor() { local t0 t1; t0=$(date +%s.%N); sqlite3 -csv -header "$DATA/surveyd.sqlite" "$FLOOR_SQL" > "$1"; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
sqlite3 -csv "$DATA/surveyd.sqlite" "$FLOOR_SQL" > /dev/null  # warm the page cache, like the export's warm-up

"$BIN" serve --data-dir "$DATA" --port "$PORT" --startup-check quick --no-log > "$WORK/export-server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
until curl -sf "$BASE/healthz" > /dev/null; do sleep 0.1; done
rss() { awk '/VmRSS/ {print $2}' /proc/$PID/status; }
rec "rss.idle_kb=$(rss)"
URL="$BASE/v1/orgs/$ORG/surveys/$SURVEY/responses.csv"
curl -s -o /dev/null "$URL?receivedFrom=2100-01-01T00:00:00Z" -H "Authorization: Bearer $REVIEWER"  # warm the route
MAXRSS=0
export_to() {
    curl -s -o "$1" -w '%{time_total} %{size_download} %{time_starttransfer}\n' "$URL" -H "Authorization: Bearer $REVIEWER" > "$WORK/export.curl" &
    local c=$! r
    while kill -0 $c 2>/dev/null; do r=$(rss); [ "$r" -gt "$MAXRSS" ] && MAXRSS=$r; sleep 0.1; done
}
FLOOR_SUM=0; EXPORT_SUM=0
for round in $(seq 1 "${ROUNDS:-3}"); do
    F=$(floor /dev/null)
    export_to /dev/null; read -r E BYTES FIRST < "$WORK/export.curl"
    rec "round.$round floor_s=$F export_s=$E export_bytes=$BYTES first_byte_s=$FIRST ratio=$(echo "$F / $E" | bc -l | cut -c1-5)"
    FLOOR_SUM=$(echo "$FLOOR_SUM + $F" | bc -l); EXPORT_SUM=$(echo "$EXPORT_SUM + $E" | bc -l)
done
rec "floor.rows_per_s=$(echo "$ROWS * ${ROUNDS:-3} / $FLOOR_SUM" | bc -l | cut -d. -f1) export.rows_per_s=$(echo "$ROWS * ${ROUNDS:-3} / $EXPORT_SUM" | bc -l | cut -d. -f1) max_rss_kb=$MAXRSS"
rec "ratio.export_vs_floor=$(echo "$FLOOR_SUM / $EXPORT_SUM" | bc -l | cut -c1-5)"
F=$(floor "$WORK/floor.csv")
export_to "$WORK/export.csv"; read -r E BYTES FIRST < "$WORK/export.curl"
rm -f "$WORK/floor.csv" "$WORK/export.csv"
rec "to_files floor_s=$F export_s=$E ratio=$(echo "$F / $E" | bc -l | cut -c1-5)"

# 3. Submissions alone, then beside exports.
export LUA_PATH="$HERE/wrk/?.lua;;" FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids-export" THREADS=2 PHASE=submit TOKEN="$COLLECTOR"
mkdir -p "$OUT_DIR"
wal() { stat -c %s "$DATA/surveyd.sqlite-wal" 2>/dev/null || echo 0; }
submit() { RUN_TAG="exp$1$(date +%s%N)" wrk -t2 -c64 -d"${SECS}s" -s "$HERE/wrk/submit.lua" "$BASE" 2>&1 | grep '^RESULT' | sed 's/.* ok_rps=\([0-9.]*\).*/\1/'; }
ALONE=$(submit alone)
rec "submit.alone_per_s=$ALONE wal_bytes=$(wal) rss_kb=$(rss)"
( while true; do curl -s -o /dev/null "$URL" -H "Authorization: Bearer $REVIEWER" || true; done ) &
LOOP=$!
MAXRSS=0
( while kill -0 $LOOP 2>/dev/null; do r=$(rss); echo "$r"; sleep 0.2; done ) > "$WORK/export-rss.samples" &
SAMPLER=$!
BESIDE=$(submit beside)
kill $LOOP 2>/dev/null || true; wait $LOOP 2>/dev/null || true
pkill -f -- "-o /dev/null $URL" 2>/dev/null || true  # the export in flight: its client goes away, its snapshot ends
kill $SAMPLER 2>/dev/null || true
MAXRSS=$(sort -n "$WORK/export-rss.samples" | tail -1)
rec "submit.beside_export_per_s=$BESIDE wal_bytes=$(wal) max_rss_kb=$MAXRSS"
rec "ratio.submit_beside_vs_alone=$(echo "$BESIDE / $ALONE" | bc -l | cut -c1-5)"
# The WAL restarts (and is cut back to journal_size_limit, 64 MB) at the first write after a
# checkpoint that the finished export no longer holds back.
sleep 1
SECS=3 submit after > /dev/null
sleep 1
rec "wal_bytes_after_exports_end=$(wal) rss_kb_after=$(rss)"
kill -TERM $PID; wait $PID || true
trap - EXIT
log "results: $RESULTS"
