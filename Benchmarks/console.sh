#!/usr/bin/env bash
# The review desk's pages on a small survey and on a large one, the same build, the same minutes:
# how a page's time grows with the survey it shows.
#
#   Benchmarks/console.sh [BIN] [COUNT]    # BIN: default a release build made here (--scratch-path
#                                          # /tmp/bench-build); COUNT: the large survey's responses
#                                          # (default 1,000,000); ~2 min, ~5 with PG=1
#
# Steps: two data dirs, each with an organization, an admin, a collector and the 35-question
# survey (reviewed) made through the CLI and the API, then seeded straight into SQLite by
# seed_responses.py: SMALL (1,000) responses in one, COUNT in the other, all `submitted` · a
# server on each in turn, and console_pages.py: the admin signs in with its token and opens the
# home page, the survey's queue, its submitted tab and its approved tab, ROUNDS (7) times each →
# the median ms per page, and the counts the page showed. Prints each page's large/small ratio.
#
# BEFORE=/path/to/older/surveyd: the data dirs are made by that build, which is measured on them
# first; BIN then migrates them at its start (the time is printed) and is measured on them after:
# a change of schema measured in one run (BIN/BEFORE per page on the large survey).
# PG=1: the large data dir is also moved into a throwaway PostgreSQL 15 cluster with
# `surveyd migrate` (by BEFORE when given) and measured there the same way.
#
# SCREENSHOTS=DIR: BIN's home page and the large survey's submitted tab are also saved as
# DIR/home-large-desktop.png and DIR/queue-large-desktop.png (headless Chromium, with the venv
# scripts/browser_tests.sh makes; Docs/console's were made so).
#
# Environment: SMALL (1000) ROUNDS (7) PG (0) BEFORE SCREENSHOTS PORT (18301) PG_PORT (15437)
# BENCH_DIR (default /tmp/surveyd-console) SCRATCH (/tmp/bench-build). Results:
# $BENCH_DIR/results.txt; the data dirs and the cluster are removed on exit, also on failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; COUNT=${2:-1000000}
SMALL=${SMALL:-1000}; ROUNDS=${ROUNDS:-7}; BEFORE=${BEFORE:-}
WORK=${BENCH_DIR:-/tmp/surveyd-console}
PORT=${PORT:-18301}; PG_PORT=${PG_PORT:-15437}
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
command -v jq > /dev/null || die "jq is not installed"
fresh_bench_dir console

SERVER_PID=
trap 'stop_server_and_cluster "$WORK"/data-*' EXIT

release_bin
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || die "no binary BEFORE=$BEFORE"
MAKER=${BEFORE:-$BIN}
rec "console.sh $(date -u +%FT%TZ) bin=$BIN before=${BEFORE:-none} small=$SMALL count=$COUNT rounds=$ROUNDS" \
    "checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)"

# serve BIN LOG ARGS... : starts a server on $PORT, waits until it answers (after any migration).
serve() {
    local bin=$1 logfile=$2; shift 2
    "$bin" serve --port "$PORT" --no-log --startup-check quick "$@" > "$logfile" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 6000); do
        curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited at start (see $logfile)"
        sleep 0.05
    done
    die "the server did not answer within 300 s (see $logfile)"
}
stop() { kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=; }

# make_data_dir DIR N: a data dir made by $MAKER with one reviewed survey and N submitted responses.
make_data_dir() {
    local dir=$1 n=$2 future u collector_id admin survey v
    mkdir -p "$dir"
    future=$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)
    ORG=$("$MAKER" admin create-org --name "Bench field team" --expires-at "$future" --data-dir "$dir" | tail -1)
    u=$("$MAKER" admin create-user --org "$ORG" --name Collector --roles collector --data-dir "$dir")
    collector_id=$(echo "$u" | sed -n 's/^userId //p')
    ADMIN=$("$MAKER" admin create-user --org "$ORG" --name Admin --roles admin --data-dir "$dir" | tail -1)
    serve "$MAKER" "$WORK/make.log" --data-dir "$dir"
    api() {
        curl -sf -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' -d "$3"
    }
    SURVEY=$(api POST "/v1/orgs/$ORG/surveys" '{"title":"Benchmark household survey","reviewRequired":true}' | jq -r .surveyId)
    v=$(api POST "/v1/orgs/$ORG/surveys/$SURVEY/versions" "{\"definition\":$(cat "$HERE/fixtures/survey.json")}")
    stop
    python3 "$HERE/seed_responses.py" --db "$dir/surveyd.sqlite" --org "$ORG" --survey "$SURVEY" \
        --version "$(echo "$v" | jq -r .surveyVersionId)" --submitter "$collector_id" --answers "$HERE/fixtures/answers.json" \
        --content-hash "$(echo "$v" | jq -r .contentHash)" --count "$n" --review-state submitted > /dev/null 2>&1
}

# measure TAG BIN ARGS... : the pages through a server of BIN; "TAG page median_ms=… …" lines.
measure() {
    local tag=$1 bin=$2 started python=python3 shots=(); shift 2
    if [ -n "${SCREENSHOTS:-}" ] && [ "$tag" = bin-large ]; then
        python="$ROOT/.build/venv-browser/bin/python"; shots=(--screenshots "$SCREENSHOTS" --name large)
        [ -x "$python" ] || die "SCREENSHOTS needs the venv scripts/browser_tests.sh makes ($python)"
    fi
    started=$(date +%s.%N)
    serve "$bin" "$WORK/serve-$tag.log" "$@"
    rec "$tag start_s=$(python3 -c "print(f'{$(date +%s.%N) - $started:.2f}')")"
    "$python" "$HERE/console_pages.py" --port "$PORT" --token "$ADMIN" --org "$ORG" --survey "$SURVEY" --rounds "$ROUNDS" \
        "${shots[@]}" | sed "s/^/$tag /" | tee -a "$RESULTS"
    stop
}

# ratio TAG_A TAG_B: per page, B's median over A's.
ratio() {
    awk -v a="$1" -v b="$2" '
        ($1 == a || $1 == b) && /median_ms=/ { tag = $1; sub(/^[^ ]+ /, ""); page = $0; sub(/: median_ms=.*/, "", page)
                             ms = $0; sub(/.*median_ms=/, "", ms); sub(/ .*/, "", ms); t[tag, page] = ms; pages[page] = 1 }
        END { for (p in pages) if (t[a, p] > 0) printf "  %-16s %s %8.1f ms   %s %8.1f ms   %s/%s %.3gx\n", p, a, t[a, p], b, t[b, p], b, a, t[b, p] / t[a, p] }
    ' "$RESULTS" | sort | tee -a "$RESULTS"
}

log "making the data dirs: $SMALL and $COUNT responses"
make_data_dir "$WORK/data-small" "$SMALL"; SMALL_ORG=$ORG SMALL_ADMIN=$ADMIN SMALL_SURVEY=$SURVEY
make_data_dir "$WORK/data-large" "$COUNT"; LARGE_ORG=$ORG LARGE_ADMIN=$ADMIN LARGE_SURVEY=$SURVEY
PG_URL=
if [ "${PG:-0}" = 1 ]; then
    log "moving the large data dir into PostgreSQL"
    PG_URL=$("$ROOT/scripts/pg_cluster.sh" start "$WORK/pg" "$PG_PORT")
    "$MAKER" migrate --from-data-dir "$WORK/data-large" --to-database-url "$PG_URL" --quiet > "$WORK/migrate.log" 2>&1 \
        || { tail -5 "$WORK/migrate.log"; die "surveyd migrate"; }
    psql -q "$PG_URL" -c ANALYZE
fi
for build in ${BEFORE:+before} bin; do
    b=$BIN; [ "$build" = before ] && b=$BEFORE
    ORG=$SMALL_ORG ADMIN=$SMALL_ADMIN SURVEY=$SMALL_SURVEY
    measure "$build-small" "$b" --data-dir "$WORK/data-small"
    ORG=$LARGE_ORG ADMIN=$LARGE_ADMIN SURVEY=$LARGE_SURVEY
    measure "$build-large" "$b" --data-dir "$WORK/data-large"
    if [ -n "$PG_URL" ]; then
        mkdir -p "$WORK/data-pg-$build"
        measure "$build-pg-large" "$b" --database-url "$PG_URL" --data-dir "$WORK/data-pg-$build"
    fi
done
rec "== the large survey ($COUNT) against the small one ($SMALL), per page"
ratio bin-small bin-large
if [ -n "$BEFORE" ]; then
    rec "== the large survey, BIN against BEFORE"
    ratio before-large bin-large
    [ -n "$PG_URL" ] && { rec "== the large survey on PostgreSQL, BIN against BEFORE"; ratio before-pg-large bin-pg-large; }
fi
rec "results: $RESULTS"
