#!/usr/bin/env bash
# Two submission doors measured alternately in the same minutes on one server (DOORS, default
# "json openrosa"; "openrosa central" compares ODK Central's API with the OpenRosa door):
#   json      — POST /v1/orgs/{org}/responses, the answers as JSON
#   openrosa  — POST /v1/key/{token}/orgs/{org}/submission, the same answers as ODK Collect sends
#               them: multipart/form-data, one xml_submission_file part (the instance written from
#               the form's XForm as served by the door)
#   central   — POST /v1/projects/{n}/forms/{formId}/submissions, the same instance as pyodk's
#               submissions.create sends it: the XML as the body, a bearer token
# all new submissions of the flat 62-question form of Benchmarks/fixtures/make_forms.py at 64
# connections. Then (BIG=1, the default) a submission with a 100 MB attachment through the
# OpenRosa door, the server's RSS sampled every 50 ms against its RSS just before.
#
#   Benchmarks/openrosa.sh [BIN] [ROUNDS]
#   DOORS="openrosa central" BIG=0 Benchmarks/openrosa.sh [BIN] [ROUNDS]
#
# Uses the data dir and tokens a previous Benchmarks/run.sh left in $BENCH_DIR (QUICK=1 is
# enough). Each round measures $SECS s (8) of wrk for each door after a 3 s warm-up, the order
# turning from round to round (use an even number). Prints accepted/s and server CPU µs per
# submission per door, the ratio second/first over all rounds, then the attachment's RSS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
BIN=${1:-/tmp/bench-build/release/surveyd}; ROUNDS=${2:-4}; SECS=${SECS:-8}
PORT=${PORT:-18080}; BASE="http://127.0.0.1:$PORT"
# shellcheck disable=SC1091
source "$WORK/env.sh"
FX="$WORK/openrosa"; mkdir -p "$FX/json" "$WORK/ids-openrosa"
python3 "$HERE/fixtures/make_forms.py" "$FX" > /dev/null
cp "$FX/flat-answers.json" "$FX/json/answers.json"
export LUA_PATH="$HERE/wrk/?.lua;;" OUT_DIR="$WORK/ids-openrosa" THREADS=2 PHASE=submit TOKEN="$COLLECTOR" FIXTURES="$FX/json"

"$BIN" serve --data-dir "$WORK/data" --port "$PORT" --startup-check quick --no-log > "$WORK/openrosa-server.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
until curl -sf "$BASE/healthz" > /dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { echo "openrosa: $BIN exited at start-up (see $WORK/openrosa-server.log)" >&2; exit 1; }
    sleep 0.1
done

# The flat form with a formId of its own, so that the door's form list names it.
survey=$(curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d '{"title":"Flat survey"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["surveyId"])')
FORM_ID="flat-$(date +%s)"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); d["formId"] = sys.argv[2]; d["questions"].append({"id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg"]}); print(json.dumps({"definition": d}))' \
    "$FX/flat.json" "$FORM_ID" > "$FX/version.json"
read -r VERSION HASH <<< "$(curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys/$survey/versions" -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/json' --data-binary "@$FX/version.json" \
    | python3 -c 'import json,sys; d = json.load(sys.stdin); print(d["surveyVersionId"], d["contentHash"])')"
export VERSION HASH ORG

# The instance Collect would send, written from the XForm the door serves.
DOOR="$BASE/v1/key/$COLLECTOR/orgs/$ORG"
curl -sf "$DOOR/formList?formID=$FORM_ID" -H 'X-OpenRosa-Version: 1.0' > "$FX/formList.xml"
url=$(python3 -c 'import sys, xml.etree.ElementTree as E; print(E.parse(sys.argv[1]).getroot().find(".//{http://openrosa.org/xforms/xformsList}downloadUrl").text)' "$FX/formList.xml")
curl -sf "$url" -H 'X-OpenRosa-Version: 1.0' > "$FX/form.xml"
python3 - "$FX/form.xml" "$FX/flat-answers.json" "$FX/instance.xml" "$FX/instance-photo.xml" <<'PY'
import copy, json, sys, xml.etree.ElementTree as E
form = E.parse(sys.argv[1]).getroot()
X = "{http://www.w3.org/2002/xforms}"
root = copy.deepcopy(form.find(f".//{X}model/{X}instance")[0])
answers = json.load(open(sys.argv[2]))
def local(e): return e.tag.split("}")[-1]
for e in root.iter():
    if local(e) in answers: e.text = str(answers[local(e)])
    if local(e) == "instanceID": e.text = "__ID__"
for e in root.iter(): e.tag = local(e)
root.attrib.pop("{http://www.w3.org/2000/xmlns/}xmlns", None)
open(sys.argv[3], "wb").write(E.tostring(root, encoding="utf-8", xml_declaration=True))
for e in root.iter():
    if e.tag == "photo": e.text = "big.jpg"
open(sys.argv[4], "wb").write(E.tostring(root, encoding="utf-8", xml_declaration=True))
PY
export INSTANCE="$FX/instance.xml" FORM_ID
PROJECT=$(curl -sf "$BASE/v1/projects" -H "Authorization: Bearer $COLLECTOR" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
export PROJECT

# shellcheck source=Benchmarks/alternate.sh
source "$HERE/alternate.sh"
one() {  # door -> "rate us_per_submission"
    case $1 in
        openrosa) measure "$1" openrosa.lua ;;
        central) EXPECT=200 measure "$1" central.lua ;;
        *) measure "$1" submit.lua ;;
    esac
}
read -r DOOR_A DOOR_B <<< "${DOORS:-json openrosa}"
alternate "$DOOR_A" "$DOOR_B" "$ROUNDS"
[ "${BIG:-1}" = 1 ] || exit 0

# One submission with a 100 MB photo: the server's RSS while it streams to disk, hashes and commits.
python3 -c '
import sys
with open(sys.argv[1], "wb") as f:
    f.write(bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00]))
    block = bytes((i * 31) & 0xFF for i in range(1 << 20))
    left = 100_000_000 - 13
    while left > 0:
        f.write(block[:min(left, len(block))]); left -= len(block)
    f.write(bytes([0xFF, 0xD9]))' "$FX/big.jpg"
sed "s/__ID__/uuid:big-$(date +%s%N)/" "$FX/instance-photo.xml" > "$FX/instance-big.xml"
rss() { awk '/^VmRSS/ {print $2}' /proc/$pid/status; }
idle=$(rss); peak=$idle
curl -s -o "$FX/big-answer.xml" -w '%{http_code}\n' "$DOOR/submission" -H 'X-OpenRosa-Version: 1.0' \
    -F "xml_submission_file=@$FX/instance-big.xml;type=text/xml" -F "big.jpg=@$FX/big.jpg;type=image/jpeg" > "$FX/big-status" &
up=$!
while kill -0 $up 2>/dev/null; do r=$(rss); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.05; done
wait $up
echo "100 MB attachment: status $(cat "$FX/big-status"), RSS idle $((idle / 1024)) MB, peak $((peak / 1024)) MB, +$(((peak - idle) / 1024)) MB"
rm -f "$FX/big.jpg"
