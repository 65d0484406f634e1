#!/usr/bin/env bash
# An entity list's CSV as phones download it (Docs/entities.md, "To phones"): a release surveyd
# with the household forms of Tests/SurveyXFormTests/Fixtures/make_entity_forms.py published and
# N entities written straight into its SQLite file; the CSV fetched through the OpenRosa door five
# times (time to first byte, total, bytes), against `sqlite3 -csv` of the same rows and columns,
# and the server's RSS before and after.
#   Benchmarks/entity_csv.sh [ENTITIES]     default 100000 (SURVEYD_BIN: a built release binary)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N="${1:-100000}"
BIN="${SURVEYD_BIN:-}"
if [ -z "$BIN" ]; then
  export PATH="/opt/swift/usr/bin:$PATH"
  swift build -c release --product surveyd >&2
  BIN="$ROOT/.build/release/surveyd"
fi
WORK="$(mktemp -d "${BENCH_DIR:-/tmp}/entity-csv.XXXXXX")"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BIN" serve --demo --port "$PORT" --data-dir "$WORK/data" --no-log > "$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do grep -q 'export ORG=' "$WORK/serve.log" 2>/dev/null && break; sleep 0.1; done
eval "$(grep -m1 -o 'export ORG=.*' "$WORK/serve.log")"
U="http://127.0.0.1:$PORT"
F="$ROOT/Tests/SurveyXFormTests/Fixtures"
for n in household_registration household_visit; do
  S=$(curl -sf -X POST "$U/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
      -d "{\"title\":\"$n\"}" | python3 -c 'import json,sys;print(json.load(sys.stdin)["surveyId"])')
  curl -sf -X POST "$U/v1/orgs/$ORG/surveys/$S/versions" -H "Authorization: Bearer $ADMIN" \
      -H 'Content-Type: application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' --data-binary "@$F/$n.xlsx" \
      | python3 -c 'import json,sys;print(json.load(sys.stdin)["surveyVersionId"])' > "$WORK/$n.vid"
done
python3 - "$WORK/data/surveyd.sqlite" "$ORG" "$N" <<'PYEOF'
import json, random, sqlite3, sys, uuid
path, org, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
random.seed(7)
db = sqlite3.connect(path, timeout=30)
rows, versions = [], []
for i in range(n):
    eid = str(uuid.UUID(int=random.getrandbits(128), version=4))
    props = json.dumps({"head": f"Head {i}", "members": str(random.randint(1, 12)), "village": f"Village {i % 300}"},
                       separators=(",", ":"), sort_keys=True)
    rows.append((org, "households", eid, f"Household of Head {i}", props, 1, "usr_bench", 1, 1))
    versions.append((org, "households", eid, 1, f"Household of Head {i}", props, "api", "usr_bench", 1))
db.executemany("INSERT INTO entities(org_id, list_name, entity_id, label, properties, version, created_by, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)", rows)
db.executemany("INSERT INTO entity_versions(org_id, list_name, entity_id, version, label, properties, source, actor, created_at) VALUES (?,?,?,?,?,?,?,?,?)", versions)
db.execute("UPDATE entity_lists SET revision = revision + 1 WHERE org_id = ? AND name = 'households'", (org,))
db.commit()
PYEOF
URL="$U/v1/key/$COLLECTOR/orgs/$ORG/forms/$(cat "$WORK/household_visit.vid")/attachments/households.csv"
echo "entities: $N"
grep -E 'VmRSS|VmHWM' "/proc/$PID/status" | sed 's/^/before: /'
for _ in 1 2 3 4 5; do
  curl -sf -o "$WORK/out.csv" -H 'X-OpenRosa-Version: 1.0' -w 'surveyd csv: first byte %{time_starttransfer}s, all %{time_total}s, %{size_download} bytes\n' "$URL"
done
grep -E 'VmRSS|VmHWM' "/proc/$PID/status" | sed 's/^/after: /'
for _ in 1 2 3; do
  /usr/bin/time -f 'sqlite3 -csv: %es' sqlite3 -csv "$WORK/data/surveyd.sqlite" \
    "SELECT entity_id, label, version, '', '', json_extract(properties, '\$.head'), json_extract(properties, '\$.members'), json_extract(properties, '\$.village') FROM entities WHERE org_id = '$ORG' AND list_name = 'households' AND deleted_at IS NULL ORDER BY entity_id" > "$WORK/sqlite.csv"
done
