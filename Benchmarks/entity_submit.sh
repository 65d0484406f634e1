#!/usr/bin/env bash
# Submissions that update an entity against plain submissions of the same form, alternately on one
# server in the same minutes (Docs/entities.md; target ≥ 0.8×): a release surveyd (`serve --demo`)
# with the household registration and visit forms of
# Tests/SurveyXFormTests/Fixtures/make_entity_forms.py published as the XForms pyxform made,
# ENTITIES (10,000) households created through ODK Central's API (batches of 2,000), then rounds
# of the visit form through the OpenRosa door as ODK Collect sends it (Benchmarks/wrk/entity_visit.lua):
#   plain   — the instance with `update="0"`: stored, no entity written
#   update  — the instance as the form writes it: each updates the next household of its thread's
#             share, from the version it is at (so none waits for another and none is late)
# Each round measures $SECS s (8) of wrk at 64 connections per kind after a 3 s warm-up, the order
# turning from round to round (Benchmarks/alternate.sh). Prints accepted/s and server CPU µs per
# submission per kind and the ratio update/plain; then checks in the database that every update
# applied cleanly (no entity in conflict, none waiting).
#
#   Benchmarks/entity_submit.sh [BIN] [ROUNDS]     BIN default /tmp/bench-entity/release/surveyd
#
# Build the binary first: swift build -c release --product surveyd --scratch-path /tmp/bench-entity
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BIN=${1:-/tmp/bench-entity/release/surveyd}; ROUNDS=${2:-4}; SECS=${SECS:-8}; N=${ENTITIES:-10000}
[ -x "$BIN" ] || { echo "entity_submit: no binary $BIN" >&2; exit 1; }
WORK=$(mktemp -d "${BENCH_DIR:-/tmp}/entity-submit.XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
"$BIN" serve --demo --port "$PORT" --data-dir "$WORK/data" --no-log > "$WORK/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 200); do grep -q 'export ORG=' "$WORK/serve.log" 2>/dev/null && break; sleep 0.1; done
eval "$(grep -m1 -o 'export ORG=.*' "$WORK/serve.log")"
F="$ROOT/Tests/SurveyXFormTests/Fixtures"
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
for n in household_registration household_visit; do
    S=$(curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        -d "{\"title\":\"$n\"}" | json '["surveyId"]')
    curl -sf -X POST "$BASE/v1/orgs/$ORG/surveys/$S/versions" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/xml' \
        --data-binary "@$F/$n.xml" > /dev/null
done

# The households, through ODK Central's API (one transaction a batch), then their ids from the list's CSV.
PROJECT=$(curl -sf "$BASE/v1/projects" -H "Authorization: Bearer $ADMIN" | json '[0]["id"]')
python3 - "$WORK/batches" "$N" <<'PY'
import json, os, sys
out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(out)
for b, start in enumerate(range(0, n, 2000)):
    entities = [{"label": f"Household of Head {i}", "data": {"head": f"Head {i}", "members": str(1 + i % 12), "village": f"Village {i % 300}"}}
                for i in range(start, min(n, start + 2000))]
    json.dump({"entities": entities, "source": {"name": "entity_submit.sh"}}, open(f"{out}/{b:04d}.json", "w"))
PY
for batch in "$WORK"/batches/*.json; do
    curl -sf -X POST "$BASE/v1/projects/$PROJECT/datasets/households/entities" -H "Authorization: Bearer $ADMIN" \
        -H 'Content-Type: application/json' --data-binary "@$batch" > /dev/null
done
DB="$WORK/data/surveyd.sqlite"
listed=$(curl -sf "$BASE/v1/orgs/$ORG/entity-lists/households/entities.csv" -H "Authorization: Bearer $ADMIN" | tail -n +2 | wc -l)
[ "$listed" = "$N" ] || { echo "entity_submit: $listed entities listed, not $N" >&2; exit 1; }
# Before each wrk run, each entity's version as the database has it (what a phone's fresh list
# would say), once the server has finished what the previous run left in flight.
before_wrk() {
    sleep 0.5
    sqlite3 -separator ' ' "$DB" "SELECT entity_id, version FROM entities WHERE org_id = '$ORG' ORDER BY entity_id" > "$WORK/ids"
}

# The visit instance as Collect writes it, from the XForm the door serves: household, members and
# meta/entity (id, baseVersion, trunkVersion and branchId as the phone's list said; the label).
DOOR="$BASE/v1/key/$COLLECTOR/orgs/$ORG"
curl -sf "$DOOR/formList?formID=household_visit" -H 'X-OpenRosa-Version: 1.0' > "$WORK/formList.xml"
url=$(python3 -c 'import sys, xml.etree.ElementTree as E; print(E.parse(sys.argv[1]).getroot().find(".//{http://openrosa.org/xforms/xformsList}downloadUrl").text)' "$WORK/formList.xml")
curl -sf "$url" -H 'X-OpenRosa-Version: 1.0' > "$WORK/form.xml"
python3 - "$WORK/form.xml" "$WORK/update.xml" "$WORK/plain.xml" <<'PY'
import copy, sys, xml.etree.ElementTree as E
form = E.parse(sys.argv[1]).getroot()
X = "{http://www.w3.org/2002/xforms}"
root = copy.deepcopy(form.find(f".//{X}model/{X}instance")[0])
def local(e): return e.tag.split("}")[-1]
for e in root.iter(): e.tag = local(e)
values = {"household": "__ENTITY__", "members_now": "5", "remarks": "Visited", "instanceID": "__ID__"}
for e in root.iter():
    if e.tag in values: e.text = values[e.tag]
entity = root.find("meta/entity")
entity.attrib.update({"id": "__ENTITY__", "baseVersion": "__BASE__", "trunkVersion": "__BASE__", "branchId": "__BRANCH__"})
entity.find("label").text = "Household of 5 people"
open(sys.argv[2], "wb").write(E.tostring(root, encoding="utf-8", xml_declaration=True))
entity.set("update", "0")
open(sys.argv[3], "wb").write(E.tostring(root, encoding="utf-8", xml_declaration=True))
PY
grep -q 'update="1"' "$WORK/update.xml" && grep -q 'update="0"' "$WORK/plain.xml"

export LUA_PATH="$HERE/wrk/?.lua;;" ORG TOKEN="$COLLECTOR" IDS_FILE="$WORK/ids" THREADS=2 PHASE=entity
# shellcheck source=Benchmarks/alternate.sh
source "$HERE/alternate.sh"
one() {  # kind -> "rate us_per_submission"
    MODE=$1 INSTANCE="$WORK/$1.xml" measure "$1" entity_visit.lua
}
echo "$BIN (checkout at $(git -C "$ROOT" rev-parse --short HEAD)), $N entities, $ROUNDS rounds of ${SECS}s"
alternate plain update "$ROUNDS"

# Every update applied once and cleanly, none waits.
read -r versions conflicts waiting stored <<< "$(sqlite3 -separator ' ' "$DB" "
    SELECT (SELECT COUNT(*) FROM entity_versions WHERE org_id = '$ORG' AND source = 'submission'),
           (SELECT COUNT(*) FROM entities WHERE org_id = '$ORG' AND conflict IS NOT NULL),
           (SELECT COUNT(*) FROM entity_waiting WHERE org_id = '$ORG'),
           (SELECT COUNT(*) FROM responses WHERE org_id = '$ORG')")"
echo "entity versions made by submissions $versions, entities in conflict $conflicts, updates waiting $waiting, responses $stored"
[ "$conflicts" = 0 ] && [ "$waiting" = 0 ] || { echo "entity_submit: not every update applied cleanly" >&2; exit 1; }
