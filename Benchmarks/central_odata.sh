#!/usr/bin/env bash
# A survey's table read through ODK Central's OData path (what pyodk's `submissions.get_table`
# reads) against surveyd's own feed of the same survey: 100,000 responses, the same server, the
# same minutes, alternately.
#
#   Benchmarks/central_odata.sh [BIN] [COUNT]   # BIN: default a release build made here
#                                               # (--scratch-path $SCRATCH); COUNT: responses
#                                               # (100,000); ~2 minutes once built
#
# Steps: a data dir made as odata.sh makes it (views_data.sh: an organization, an admin, a
# collector and the survey of fixtures/make_views.py made through the CLI and the API, three
# responses sent through the API and checked, then COUNT seeded by seed_responses.py with 1,000
# different answers documents) · a server on it · central_odata_feed.py: `Submissions` read in
# full ROUNDS (3) times each way, in turning order — surveyd's own feed by nextLink pages of
# 1,000 rows; Central's path in one GET (the whole table, as pyodk reads it); Central's path by
# nextLink pages of 1,000 (`Prefer: odata.maxpagesize=1000`) — every read's rows counted and
# compared → the rate ratios Central / own (target ≥ 0.9).
#
# Environment: ROUNDS (3) PORT (18303) BENCH_DIR (default /tmp/surveyd-central-odata) SCRATCH
# (/tmp/bench-central-odata). Results: $BENCH_DIR/results.txt; the data dir is removed on exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; COUNT=${2:-100000}
ROUNDS=${ROUNDS:-3}
WORK=${BENCH_DIR:-/tmp/surveyd-central-odata}
PORT=${PORT:-18303}
SCRATCH=${SCRATCH:-/tmp/bench-central-odata}
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
# shellcheck source=views_data.sh
source "$HERE/views_data.sh"
for tool in jq sqlite3 curl; do command -v $tool > /dev/null || die "$tool is not installed"; done
fresh_bench_dir central-odata

SERVER_PID=
trap 'stop_server_and_cluster "$WORK"/data' EXIT

release_bin
rec "central_odata.sh $(date -u +%FT%TZ) bin=$BIN count=$COUNT rounds=$ROUNDS" \
    "checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)"

log "making the data dir: $COUNT responses with 5 repeat instances each"
DATA="$WORK/data"
make_views_data_dir "$DATA" "$COUNT" 20

serve "$WORK/serve.log" --data-dir "$DATA"
BASE="http://127.0.0.1:$PORT"
PROJECT=$(curl -sf "$BASE/v1/projects" -H "Authorization: Bearer $ADMIN" | jq -r '.[0].id')
FORM=$(curl -sf "$BASE/v1/projects/$PROJECT/forms" -H "Authorization: Bearer $ADMIN" | jq -r '.[0].xmlFormId')
[ -n "$FORM" ] && [ "$FORM" != null ] || die "no form in project $PROJECT"
rec "project=$PROJECT form=$FORM"
log "reading Submissions both ways"
python3 "$HERE/central_odata_feed.py" --port "$PORT" --token "$ADMIN" --org "$ORG" --survey "$SURVEY" --project "$PROJECT" --form "$FORM" \
    --rounds "$ROUNDS" | tee -a "$RESULTS"
rec "rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status")"
stop
rec "results: $RESULTS"
