#!/usr/bin/env bash
# The console's entity list page (Docs/entities.md, "In the console") at N entities: the
# household forms of Tests/SurveyXFormTests/Fixtures/make_entity_forms.py published on a surveyd,
# N entities written straight into its SQLite file (1 % in conflict, half of them hard), then an
# admin's console pages fetched 20 times each — the first page (conflicts first), a page deep in
# the list (keyset), a search that matches a few hundred entities, one that matches a single
# entity and one that matches none (a searched page reads at most 15,000 entities, then offers to
# search further) — each one's median and slowest time, and the server's CPU time a page.
#   Benchmarks/entity_pages.sh [ENTITIES]   default 100000 (SURVEYD_BIN: a built binary; default: a release build)
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
WORK="$(mktemp -d "${BENCH_DIR:-/tmp}/entity-pages.XXXXXX")"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BIN" serve --demo --port "$PORT" --data-dir "$WORK/data" --no-log > "$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do grep -q 'export ORG=' "$WORK/serve.log" 2>/dev/null && break; sleep 0.1; done
eval "$(grep -m1 -o 'export ORG=.*' "$WORK/serve.log")"
U="http://127.0.0.1:$PORT"
F="$ROOT/Tests/SurveyXFormTests/Fixtures"
S=$(curl -sf -X POST "$U/v1/orgs/$ORG/surveys" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    -d '{"title":"household_registration"}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["surveyId"])')
curl -sf -o /dev/null -X POST "$U/v1/orgs/$ORG/surveys/$S/versions" -H "Authorization: Bearer $ADMIN" \
    -H 'Content-Type: application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' --data-binary "@$F/household_registration.xlsx"
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
    conflict = ("hard" if i % 200 == 0 else "soft") if i % 100 == 0 else None
    rows.append((org, "households", eid, f"Household of Head {i}", props, 1, conflict, "usr_bench", 1, 1))
    versions.append((org, "households", eid, 1, f"Household of Head {i}", props, "api", "usr_bench", 1))
db.executemany("INSERT INTO entities(org_id, list_name, entity_id, label, properties, version, conflict, created_by, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
db.executemany("INSERT INTO entity_versions(org_id, list_name, entity_id, version, label, properties, source, actor, created_at) VALUES (?,?,?,?,?,?,?,?,?)", versions)
db.execute("UPDATE entity_lists SET revision = revision + 1 WHERE org_id = ? AND name = 'households'", (org,))
db.commit()
db.execute("ANALYZE")
PYEOF
COOKIE=$(curl -s -o /dev/null -D - -X POST "$U/console/sign-in" --data-urlencode "token=$ADMIN" | tr -d '\r' \
         | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -n 1)
PAGE="$U/console/orgs/$ORG/entity-lists/households"
echo "entities: $N ($((N / 100)) in conflict)"
measure() {  # NAME URL
  curl -sf -o "$WORK/page.html" -H "Cookie: $COOKIE" "$2"
  local rows
  rows=$(awk -F'<tr data-entity=' 'NF > 1 { n += NF - 1 } END { print n + 0 }' "$WORK/page.html")
  # The server's CPU time over the 20 requests (utime + stime, in clock ticks): what a page costs
  # whatever else the machine is doing.
  local before after
  before=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
  for _ in $(seq 1 20); do curl -sf -o /dev/null -H "Cookie: $COOKIE" -w '%{time_total}\n' "$2"; done | sort -n > "$WORK/times"
  after=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
  awk -v name="$1" -v rows="$rows" -v cpu="$(( (after - before) * 1000 / $(getconf CLK_TCK) / 20 ))" '{ t[NR] = $1 } END {
    printf "%-34s %3d rows  median %6.1f ms  slowest %6.1f ms  server CPU %4d ms a page\n", name, rows, t[int((NR + 1) / 2)] * 1000, t[NR] * 1000, cpu }' "$WORK/times"
}
measure "first page (conflicts first)" "$PAGE"
# A page in the middle of the entities without conflict: the keyset of the page before it.
MID=$(sqlite3 "$WORK/data/surveyd.sqlite" "SELECT entity_id FROM entities WHERE conflict IS NULL ORDER BY entity_id LIMIT 1 OFFSET $((N / 2))")
measure "a page half-way (keyset)" "$PAGE?after=n:$MID"
measure "search: a village (1 in 300)" "$PAGE?q=village%20217"
measure "search: one match (15,000 read)" "$PAGE?q=head%2099991"
measure "search: no match (15,000 read)" "$PAGE?q=nowhere"
grep -E 'VmRSS|VmHWM' "/proc/$PID/status"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
