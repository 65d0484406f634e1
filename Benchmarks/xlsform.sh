#!/usr/bin/env bash
# Publishing a large XLSForm end to end, split into its parts, all in one run:
#   pyxform alone   — xls2xform converting the XLSForm (what the server runs as a child process)
#   XLSForm publish — POST .../versions with the .xlsx: pyxform, the XForm read, the definition
#                     checked and the version written, through HTTP
#   XForm publish   — POST .../versions with the XForm pyxform made: everything but pyxform
# Each is run ROUNDS times (3) and the median printed, with pyxform's share of the XLSForm publish.
#
#   Benchmarks/xlsform.sh [BIN] [QUESTIONS]     BIN: .build/debug/surveyd; QUESTIONS: 300
# Needs scripts/setup.sh's .build/venv-forms (pyxform, openpyxl).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-$ROOT/.build/debug/surveyd}; N=${2:-300}; ROUNDS=${ROUNDS:-3}
VENV="$ROOT/.build/venv-forms"
WORK=$(mktemp -d /tmp/surveyd-xlsform.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
"$VENV/bin/python" "$HERE/fixtures/make_xlsform.py" "$WORK/form.xlsx" "$N" >&2
"$BIN" serve --demo --port "$PORT" --data-dir "$WORK/data" --no-log --pyxform "$VENV/bin/xls2xform" > "$WORK/server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -rf "$WORK"' EXIT
until grep -q '^ *export ORG=' "$WORK/server.log" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "xlsform: $BIN exited at start-up" >&2; cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
done
eval "$(grep '^ *export ORG=' "$WORK/server.log")"
SURVEY=$(curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d '{"title":"Large form"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["surveyId"])')

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'; }
publish() {  # content type, file: fails unless 201
    local status
    status=$(curl -s -o "$WORK/answer.json" -w '%{http_code}' -X POST "$BASE/v1/orgs/$ORG/surveys/$SURVEY/versions" \
        -H "Authorization: Bearer $ADMIN" -H "Content-Type: $1" --data-binary "@$2")
    [ "$status" = 201 ] || { echo "xlsform: publishing $2 answered $status: $(cat "$WORK/answer.json")" >&2; exit 1; }
}
"$VENV/bin/xls2xform" --skip_validate "$WORK/form.xlsx" "$WORK/form.xml" > /dev/null
py=(); xl=(); xf=()
for _ in $(seq 1 "$ROUNDS"); do
    py+=("$(seconds "$VENV/bin/xls2xform" --json --skip_validate "$WORK/form.xlsx" "$WORK/again.xml" 2>/dev/null)")
    xl+=("$(seconds publish application/vnd.openxmlformats-officedocument.spreadsheetml.sheet "$WORK/form.xlsx")")
    xf+=("$(seconds publish application/xml "$WORK/form.xml")")
done
P=$(printf '%s\n' "${py[@]}" | median); L=$(printf '%s\n' "${xl[@]}" | median); X=$(printf '%s\n' "${xf[@]}" | median)
echo "$N questions, $(wc -c < "$WORK/form.xlsx") bytes of XLSForm, $(wc -c < "$WORK/form.xml") bytes of XForm; medians of $ROUNDS rounds"
echo "pyxform alone:   ${P} s"
echo "XLSForm publish: ${L} s (pyxform's share $(awk -v p="$P" -v l="$L" 'BEGIN {printf "%.0f %%", 100 * p / l}'))"
echo "XForm publish:   ${X} s (read, checked, written, through HTTP)"
