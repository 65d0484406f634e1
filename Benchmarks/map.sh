#!/usr/bin/env bash
# The console's Map view of a survey of 100,000 located responses, and of one of 10,000 in the
# same run, in headless Chromium (target: 100,000 points loaded in < 3 s), with the server's time
# to serve the points and the browser's JS heap.
#
#   Benchmarks/map.sh [BIN] [COUNTS]    # BIN: default a release build made here
#                                       # (--scratch-path /tmp/bench-build); COUNTS: the
#                                       # surveys' sizes, smallest first ("10000 100000")
#
# Steps: one data dir; for each size N of COUNTS an organization, its admin, a collector and the
# survey of fixtures/make_views.py (views_data.sh: made through the CLI and the API, three
# responses sent through the API and compared with what is stored, then N - 3 seeded by
# seed_responses.py), every response with a location of its own (VARIANTS = N answers documents,
# their points spread over 8° × 8°) · one server on it · map_pages.py (Selenium from
# .build/venv-browser, the Debian chromium and chromedriver): the clusters URL the page names
# asked for the whole world ROUNDS + 1 times over HTTP (the first reads the located responses from
# the database, the others cluster the list the server kept) and for one view at zoom 10; then the
# Map view of each survey opened ROUNDS (5) times, in turn, after one unmeasured round each, in a
# headless Chromium of its own signed in as that survey's admin: once with the server's list kept
# ("kept"), once with a filter selecting every response spelled anew each round, so the server
# reads them from the database each time ("read"). A round's time runs from the navigation's
# start until the page is drawn with every point (`data-markers` = N = the server's `data-total`,
# and the marker pane's clusters and markers adding up to N, no animation running; see
# map_pages.py) → the median per size and kind, the parts of the load (the clusters' requests,
# the page's own marks), the JS heap after a garbage collection, and the largest size's median
# over the smallest's.
#
# Environment: ROUNDS (5) SPACING_MS (500) PORT (18305) BENCH_DIR (default /tmp/surveyd-map)
# SCRATCH (/tmp/bench-build) VENV (.build/venv-browser). Results: $BENCH_DIR/results.txt; the
# data dir is removed on exit, also on failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; COUNTS=${2:-10000 100000}
ROUNDS=${ROUNDS:-5}; SPACING_MS=${SPACING_MS:-500}
WORK=${BENCH_DIR:-/tmp/surveyd-map}
PORT=${PORT:-18305}
VENV=${VENV:-$ROOT/.build/venv-browser}
export PATH="/opt/swift/usr/bin:$PATH"
# Selenium must never try to fetch a browser or driver of its own: the Debian ones are used.
export SE_OFFLINE=true

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
# shellcheck source=views_data.sh
source "$HERE/views_data.sh"
for tool in jq sqlite3 chromium chromedriver; do command -v $tool > /dev/null || die "$tool is not installed"; done
[ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import selenium" 2> /dev/null \
    || die "no Selenium in $VENV (scripts/browser_tests.sh makes it)"
fresh_bench_dir map

SERVER_PID=
trap 'stop_server_and_cluster "$WORK/data"' EXIT

release_bin
rec "map.sh $(date -u +%FT%TZ) bin=$BIN counts=$COUNTS rounds=$ROUNDS" \
    "checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)" \
    "chromium=$(chromium --version 2>/dev/null | awk '{print $2}')"

DATA="$WORK/data"
surveys=()
for n in $COUNTS; do
    log "the survey of $n located responses"
    VARIANTS=$n make_views_data_dir "$DATA" "$n" "$SPACING_MS"
    located=$(sqlite3 "$DATA/surveyd.sqlite" "SELECT COUNT(*) FROM responses WHERE survey_id = '$SURVEY'
        AND json_extract(answers, '$.location.lat') IS NOT NULL")
    [ "$located" -eq "$n" ] || die "the survey has $located located responses, not $n"
    surveys+=(--survey "$n:$ORG:$ADMIN:$SURVEY")
done
serve "$WORK/serve.log" --data-dir "$DATA"
"$VENV/bin/python" "$HERE/map_pages.py" --port "$PORT" --rounds "$ROUNDS" "${surveys[@]}" 2>&1 | tee -a "$RESULTS" || die "map_pages.py"
stop
rec "results: $RESULTS"
