#!/usr/bin/env bash
# New submissions of a form with logic against a flat form, measured alternately in the same
# minutes on one server:
#   flat    — a version-1 form of 62 text questions
#   roster  — a household survey as field teams write it (Benchmarks/fixtures/make_forms.py):
#             3 groups, a roster of 8 people x 10 questions, 88 relevance / constraint /
#             repeat-count expressions, two languages; answers of the same number of bytes
#
#   Benchmarks/forms.sh [BIN] [ROUNDS]
#
# Uses the data dir and tokens a previous Benchmarks/run.sh left in $BENCH_DIR (QUICK=1 is
# enough). Starts BIN once, publishes both forms, then each round measures $SECS s (8) of wrk
# submissions at 64 connections for each form after a 3 s warm-up, the order turning from
# round to round (use an even number). Prints accepted/s and server CPU µs per submission per
# form, the ratio roster/flat over all rounds, and the extra CPU per submission the roster's
# checks cost.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
BIN=${1:-/tmp/bench-build/release/surveyd}; ROUNDS=${2:-4}; SECS=${SECS:-8}
PORT=${PORT:-18080}; BASE="http://127.0.0.1:$PORT"
# shellcheck disable=SC1091
source "$WORK/env.sh"
FX="$WORK/forms"; mkdir -p "$FX/flat" "$FX/roster" "$WORK/ids-forms"
python3 "$HERE/fixtures/make_forms.py" "$FX"
cp "$FX/flat-answers.json" "$FX/flat/answers.json"; cp "$FX/roster-answers.json" "$FX/roster/answers.json"
export LUA_PATH="$HERE/wrk/?.lua;;" OUT_DIR="$WORK/ids-forms" THREADS=2 PHASE=submit TOKEN="$COLLECTOR"

"$BIN" serve --data-dir "$WORK/data" --port "$PORT" --startup-check quick --no-log > "$WORK/forms-server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
until curl -sf "$BASE/healthz" > /dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { echo "forms: $BIN exited at start-up (see $WORK/forms-server.log)" >&2; exit 1; }
    sleep 0.1
done

publish() {  # form -> "versionId hash"
    local survey; survey=$(curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" \
        -H 'Content-Type: application/json' -d "{\"title\":\"$1\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["surveyId"])')
    python3 -c 'import json,sys; print(json.dumps({"definition": json.load(open(sys.argv[1]))}))' "$FX/$1.json" > "$FX/$1-version.json"
    curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys/$survey/versions" -H "Authorization: Bearer $ADMIN" \
        -H 'Content-Type: application/json' --data-binary "@$FX/$1-version.json" \
        | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d["surveyVersionId"], d["contentHash"])'
}
read -r FLAT_VERSION FLAT_HASH <<< "$(publish flat)"
read -r ROSTER_VERSION ROSTER_HASH <<< "$(publish roster)"

# shellcheck source=Benchmarks/alternate.sh
source "$HERE/alternate.sh"
one() {  # form -> "rate us_per_submission"
    local version hash
    if [ "$1" = flat ]; then version=$FLAT_VERSION hash=$FLAT_HASH; else version=$ROSTER_VERSION hash=$ROSTER_HASH; fi
    export FIXTURES="$FX/$1" VERSION="$version" HASH="$hash"
    measure "$1" submit.lua
}
alternate flat roster "$ROUNDS"
echo "the roster's checks: $((MEAN_US_B - MEAN_US_A))us a submission"
