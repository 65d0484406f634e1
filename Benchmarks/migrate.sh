#!/usr/bin/env bash
# `surveyd migrate` of a large SQLite data dir into PostgreSQL, beside PostgreSQL's own COPY of the
# same rows, then `surveyd backup` and `surveyd check` of that data dir:
#
#   Benchmarks/migrate.sh [BIN]      # BIN: a release surveyd; default: built here (clean scratch path)
#
# 1. a data dir through the CLI and the API (organization, users, the benchmark survey), then
#    RESPONSES stored responses (1,000,000) and FILES stored files (10,000, FILE_BYTES on average)
#    seeded straight into SQLite by seed_responses.py, as the server writes them; `surveyd check`
#    must pass on it;
# 2. `surveyd migrate` into an empty database of a fresh PostgreSQL cluster (PORT 54399);
# 3. the floor: the migrated rows written out with `COPY … TO` (text files), then loaded with
#    psql's `\copy … FROM` into a second empty database with the same schema (indexes and foreign
#    keys in place, as migrate has them), all in one transaction, as migrate does;
# 4. pg_dump -Fc of the migrated database and pg_restore of it into a third database (which loads
#    the rows first and builds indexes and foreign keys after);
# 5. `surveyd backup` and `surveyd check` of the SQLite data dir.
# Prints rows/s and MB/s (MB: the rows' bytes in COPY's text form) of each and migrate's ratio to
# the floor; every command's progress lines go to WORK/*.log. Knobs: RESPONSES, FILES, FILE_BYTES,
# PORT, WORK (/tmp/surveyd-migrate-bench), SCRATCH (/tmp/bench-migrate), KEEP=1 (keep WORK).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RESPONSES=${RESPONSES:-1000000}
FILES=${FILES:-10000}
FILE_BYTES=${FILE_BYTES:-50000}
PORT=${PORT:-54399}
WORK=${WORK:-/tmp/surveyd-migrate-bench}
SCRATCH=${SCRATCH:-/tmp/bench-migrate}
NICE=(nice -n 19)
log() { echo "== $*" >&2; }
die() { echo "migrate.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }

BIN=${1:-}
if [ -z "$BIN" ]; then
    log "release build from a clean scratch path ($SCRATCH)"
    rm -rf "$SCRATCH"
    (cd "$ROOT" && "${NICE[@]}" swift build -c release --scratch-path "$SCRATCH" --product surveyd >&2)
    BIN="$SCRATCH/release/surveyd"
fi
[ -x "$BIN" ] || die "no surveyd at $BIN"

rm -rf "$WORK"
mkdir -p "$WORK"
DATA=$WORK/data
PG_DIR=$WORK/pg
cleanup() {
    [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true
    "$ROOT/scripts/pg_cluster.sh" stop "$PG_DIR" || true
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# --- 1. the data dir ----------------------------------------------------------------------------
log "a data dir through the CLI and the API"
future=$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)
"$BIN" admin create-operator --data-dir "$DATA" > /dev/null
ORG=$("$BIN" admin create-org --name "Bench field team" --expires-at "$future" --data-dir "$DATA" | tail -1)
u=$("$BIN" admin create-user --org "$ORG" --name Collector --roles collector --data-dir "$DATA")
COLLECTOR_ID=$(echo "$u" | sed -n 's/^userId //p')
ADMIN=$("$BIN" admin create-user --org "$ORG" --name Admin --roles admin --data-dir "$DATA" | tail -1)
HTTP_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --data-dir "$DATA" --port "$HTTP_PORT" --no-log 2> "$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" > /dev/null && break; sleep 0.1; done
api() {
    curl -sf -X "$1" "http://127.0.0.1:$HTTP_PORT$2" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' -d "$3"
}
SURVEY=$(api POST "/v1/orgs/$ORG/surveys" '{"title":"Benchmark household survey","reviewRequired":true}' | jq -r .surveyId)
v=$(api POST "/v1/orgs/$ORG/surveys/$SURVEY/versions" "{\"definition\":$(cat "$HERE/fixtures/survey.json")}")
VERSION=$(echo "$v" | jq -r .surveyVersionId)
HASH=$(echo "$v" | jq -r .contentHash)
kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=
log "seeding $RESPONSES responses and $FILES files"
"${NICE[@]}" python3 "$HERE/seed_responses.py" --db "$DATA/surveyd.sqlite" --org "$ORG" --survey "$SURVEY" --version "$VERSION" \
    --submitter "$COLLECTOR_ID" --answers "$HERE/fixtures/answers.json" --content-hash "$HASH" --count "$RESPONSES" \
    --review-state submitted --files "$FILES" --file-bytes "$FILE_BYTES" 2> "$WORK/seed.log" >&2
du -sh "$DATA/surveyd.sqlite" "$DATA/blobs" >&2

# --- 2. surveyd migrate -------------------------------------------------------------------------
URL=$("$ROOT/scripts/pg_cluster.sh" start "$PG_DIR" "$PORT")
admin_url=$URL
db_url() { echo "${admin_url/\/\/\/postgres/\/\/\/$1}"; }
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
for db in migrated floor restored; do "${PSQL[@]}" "$admin_url" -c "CREATE DATABASE $db"; done
sync
log "surveyd migrate"
t0=$(now)
"${NICE[@]}" "$BIN" migrate --from-data-dir "$DATA" --to-database-url "$(db_url migrated)" > "$WORK/migrate.out" 2> "$WORK/migrate.log" \
    || { cat "$WORK/migrate.out" "$WORK/migrate.log" >&2; die "migrate failed"; }
t1=$(now)
grep -q "surveyd check: OK" "$WORK/migrate.out" || die "the migrated database did not pass check"
MIGRATE_S=$(secs "$t0" "$t1")
cat "$WORK/migrate.log" >&2

# --- 3. the floor: COPY of the same rows --------------------------------------------------------
TABLES=(orgs users tokens audit surveys survey_versions survey_version_sources responses uploads resumable_uploads tasks
        idempotency_keys invitations console_sessions webhooks webhook_deliveries webhook_snapshots webhook_identity export_cursor_key)
log "the floor: COPY of the same rows into an empty database with the same schema"
pg_dump --schema-only "$(db_url migrated)" | "${PSQL[@]}" "$(db_url floor)" > /dev/null
mkdir -p "$WORK/copy"
ROWS=0
for t in "${TABLES[@]}"; do
    "${PSQL[@]}" "$(db_url migrated)" -c "\\copy $t TO '$WORK/copy/$t.tsv'"
    ROWS=$((ROWS + $(wc -l < "$WORK/copy/$t.tsv")))
done
ROW_BYTES=$(cat "$WORK/copy"/*.tsv | wc -c)
{
    echo "BEGIN;"
    for t in webhook_identity export_cursor_key; do echo "DELETE FROM $t;"; done
    for t in "${TABLES[@]}"; do echo "\\copy $t FROM '$WORK/copy/$t.tsv'"; done
    echo "COMMIT;"
} > "$WORK/floor.sql"
sync
t0=$(now)
"${NICE[@]}" "${PSQL[@]}" "$(db_url floor)" -f "$WORK/floor.sql"
t1=$(now)
FLOOR_S=$(secs "$t0" "$t1")

# --- 4. pg_dump / pg_restore --------------------------------------------------------------------
log "pg_dump -Fc and pg_restore of the migrated database"
t0=$(now)
"${NICE[@]}" pg_dump -Fc -f "$WORK/migrated.dump" "$(db_url migrated)"
t1=$(now)
"${NICE[@]}" pg_restore --single-transaction --no-owner -d "$(db_url restored)" "$WORK/migrated.dump"
t2=$(now)
DUMP_S=$(secs "$t0" "$t1"); RESTORE_S=$(secs "$t1" "$t2")

# --- 5. backup and check of the data dir --------------------------------------------------------
log "surveyd backup and surveyd check of the SQLite data dir"
sync
t0=$(now)
"${NICE[@]}" "$BIN" backup --data-dir "$DATA" --to "$WORK/backup" > "$WORK/backup.out" 2> "$WORK/backup.log"
t1=$(now)
"${NICE[@]}" "$BIN" check --data-dir "$DATA" > "$WORK/check.out" 2> "$WORK/check.log" || { cat "$WORK/check.out" >&2; die "check failed"; }
t2=$(now)
BACKUP_S=$(secs "$t0" "$t1"); CHECK_S=$(secs "$t1" "$t2")
cat "$WORK/backup.log" "$WORK/check.log" >&2

# --- results ------------------------------------------------------------------------------------
# The rows phase of migrate, from its own closing line ("surveyd migrate: rows: N rows in 1 min 5 s, …").
ROWS_S=$(python3 - "$WORK/migrate.log" <<'EOF'
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r"surveyd migrate: rows: [\d,]+ rows in (.*?)(?:,|$)", line.strip())
    if m:
        t = m.group(1)
        h = re.search(r"(\d+) h", t); mi = re.search(r"(\d+) min", t); s = re.search(r"([\d.]+) s", t)
        print((int(h.group(1)) * 3600 if h else 0) + (int(mi.group(1)) * 60 if mi else 0) + (float(s.group(1)) if s else 0))
        break
EOF
)
python3 - <<EOF
rows, mb = $ROWS, $ROW_BYTES / 1e6
runs = [("surveyd migrate, rows phase", $ROWS_S), ("surveyd migrate, whole (rows, files, check)", $MIGRATE_S),
        ("psql \\\\copy FROM, one transaction (the floor)", $FLOOR_S), ("pg_restore --single-transaction", $RESTORE_S)]
print(f"rows {rows:,}, {mb:,.1f} MB in COPY's text form; files {$FILES:,}")
for name, s in runs:
    print(f"{name:48s} {s:8.1f} s  {rows / s:10,.0f} rows/s  {mb / s:7.1f} MB/s")
print(f"migrate's rows phase / the floor: {$FLOOR_S / $ROWS_S:.2f}x; / pg_restore: {$RESTORE_S / $ROWS_S:.2f}x")
print(f"pg_dump -Fc {$DUMP_S:.1f} s; surveyd backup {$BACKUP_S:.1f} s; surveyd check {$CHECK_S:.1f} s")
EOF
