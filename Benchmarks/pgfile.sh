#!/usr/bin/env bash
# A large file on PostgreSQL read back through a surveyd process other than the one that stored
# it, beside psql copying the same pieces out of the same cluster, in the same minutes.
#
#   Benchmarks/pgfile.sh [BIN] [ROUNDS]     # BIN: default a release build made here (--scratch-path
#                                            # /tmp/bench-build); ROUNDS: default 3
#
# Steps: one throwaway PostgreSQL 15 cluster (scripts/pg_cluster.sh) · an organization, a
# collector and a survey with one file question, through the CLI and a first surveyd process,
# which stores one file of FILE_MIB MiB (1024: 1 GiB; a JPEG signature, then random bytes) with
# one PUT · that process stops, a second one starts on its own data dir and the same database ·
# then ROUNDS rounds, the order turning each round:
#   surveyd  curl GET …/uploads/{id}/content -o /dev/null through the second process; its RSS
#            sampled every 50 ms (idle before, the peak during)                        → MiB/s
#   psql     psql -c "\copy (SELECT bytes FROM blob_chunks WHERE sha256 = … ORDER BY n) TO '/dev/null'"
#            (COPY's text format: the bytes as hex)                                      → MiB/s
# and last, one more read through the second process, piped to sha256sum, which must give the
# stored file's hash. Prints each round, the means and the ratio surveyd/psql. Results:
# $BENCH_DIR/results.txt (default /tmp/surveyd-pgfile); the cluster and data dirs are removed on
# exit, also on failure.
#
# Environment: FILE_MIB (1024) PG_PORT (15436) PORT (18291) BENCH_DIR SCRATCH (/tmp/bench-build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; ROUNDS=${2:-3}
FILE_MIB=${FILE_MIB:-1024}
WORK=${BENCH_DIR:-/tmp/surveyd-pgfile}
PG_PORT=${PG_PORT:-15436}; PORT=${PORT:-18291}
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
command -v jq > /dev/null || die "jq is not installed"
fresh_bench_dir pgfile

SERVER_PID=
trap 'stop_server_and_cluster "$WORK"/data* "$WORK/file"' EXIT

release_bin

log "starting PostgreSQL (port $PG_PORT, $WORK/pg)"
URL=$("$ROOT/scripts/pg_cluster.sh" start "$WORK/pg" "$PG_PORT")
PSQL=(psql -h "$WORK/pg" -p "$PG_PORT" -U postgres -d postgres -XAtq)
rec "software.postgres=$("${PSQL[@]}" -c 'SHOW server_version') checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?) bin=$BIN file_mib=$FILE_MIB rounds=$ROUNDS"

BYTES=$((FILE_MIB * 1048576))
admin() { "$BIN" admin "$@" --data-dir "$WORK/data1" --database-url "$URL" 2>> "$WORK/admin.log"; }
admin create-operator > /dev/null
ORG=$(admin create-org --name "File bench" --expires-at "$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)")
COLLECTOR=$(admin create-user --org "$ORG" --name Collector --roles collector | tail -1)
ADMIN=$(admin create-user --org "$ORG" --name Admin --roles admin | tail -1)

start_server() {  # data dir
    "$BIN" serve --data-dir "$1" --port "$PORT" --database-url "$URL" --startup-check quick --no-log \
        --max-file-bytes $((BYTES + 1048576)) --max-body-bytes $((BYTES + 1048576)) >> "$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    tail "$WORK/server.log" >&2; die "surveyd did not start"
}
stop_server() { kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || die "surveyd exited with $? on SIGTERM"; SERVER_PID=; }
api() {  # method path token json -> body
    local out code
    out=$(curl -s -w '\n%{http_code}' -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' -d "$4")
    code=${out##*$'\n'}
    [[ $code == 2* ]] || die "$1 $2 answered $code: ${out%$'\n'*}"
    printf '%s' "${out%$'\n'*}"
}

log "storing a ${FILE_MIB} MiB file through a first process"
start_server "$WORK/data1"
SURVEY=$(api POST "/v1/orgs/$ORG/surveys" "$ADMIN" '{"title":"Files","reviewRequired":false}' | jq -r .surveyId)
VERSION=$(api POST "/v1/orgs/$ORG/surveys/$SURVEY/versions" "$ADMIN" \
    "{\"definition\":{\"title\":\"Files\",\"questions\":[{\"id\":\"photo\",\"type\":\"file\",\"label\":\"Photo\",\"accept\":[\"image/jpeg\"],\"maxBytes\":$((BYTES + 1048576))}]}}" \
    | jq -r .surveyVersionId)
{ printf '\377\330\377\340'; head -c $((BYTES - 4)) /dev/urandom; } > "$WORK/file"
SHA=$(sha256sum "$WORK/file" | cut -d' ' -f1)
UPLOAD=upl-bench-file-0001
code=$(curl -s -o "$WORK/put.json" -w '%{http_code}' -X PUT "http://127.0.0.1:$PORT/v1/orgs/$ORG/uploads/$UPLOAD" -H "Authorization: Bearer $COLLECTOR" \
    -H 'Content-Type: image/jpeg' -H "Survey-Version-Id: $VERSION" -H 'Question-Id: photo' -T "$WORK/file")
[ "$code" = 201 ] || die "PUT answered $code: $(cat "$WORK/put.json")"
rm -f "$WORK/file"
stop_server
pieces=$("${PSQL[@]}" -c "SELECT count(*) FROM blob_chunks WHERE sha256 = '$SHA'")
rec "stored: $BYTES bytes in $pieces pieces, sha256 $SHA"

log "reading it back through a second process"
start_server "$WORK/data2"
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
read_surveyd() {  # sets SECONDS_TAKEN PEAK_KIB
    local peak=0 r start end pid
    start=$(date +%s%N)
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/v1/orgs/$ORG/uploads/$UPLOAD/content" -H "Authorization: Bearer $COLLECTOR" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        r=$(rss_kib); [ "${r:-0}" -gt "$peak" ] && peak=$r
        sleep 0.05
    done
    wait "$pid" || die "the read through surveyd failed"
    end=$(date +%s%N)
    SECONDS_TAKEN=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
    PEAK_KIB=$peak
}
read_psql() {
    local start end
    start=$(date +%s%N)
    "${PSQL[@]}" -c "\\copy (SELECT bytes FROM blob_chunks WHERE sha256 = '$SHA' ORDER BY n) TO '/dev/null'"
    end=$(date +%s%N)
    SECONDS_TAKEN=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
}
mibs() { awk -v b="$BYTES" -v s="$1" 'BEGIN {printf "%.1f", b / 1048576 / s}'; }

# One read each first, not counted: the pieces into PostgreSQL's cache and the page cache.
read_surveyd; read_psql
IDLE_KIB=$(rss_kib)
SUM_SD=0; SUM_PG=0; PEAK_MAX=0
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="surveyd psql"; else order="psql surveyd"; fi
    for m in $order; do
        if [ "$m" = surveyd ]; then
            read_surveyd; SD=$SECONDS_TAKEN; PEAK=$PEAK_KIB
            [ "$PEAK" -gt "$PEAK_MAX" ] && PEAK_MAX=$PEAK
        else
            read_psql; PG=$SECONDS_TAKEN
        fi
    done
    SUM_SD=$(awk -v a="$SUM_SD" -v b="$SD" 'BEGIN {print a + b}'); SUM_PG=$(awk -v a="$SUM_PG" -v b="$PG" 'BEGIN {print a + b}')
    rec "round $r ($order): surveyd $SD s ($(mibs "$SD") MiB/s, peak RSS $((PEAK / 1024)) MiB)   psql $PG s ($(mibs "$PG") MiB/s)   surveyd/psql $(awk -v a="$PG" -v b="$SD" 'BEGIN {printf "%.3f", a / b}')"
done
got=$(curl -sf "http://127.0.0.1:$PORT/v1/orgs/$ORG/uploads/$UPLOAD/content" -H "Authorization: Bearer $COLLECTOR" | sha256sum | cut -d' ' -f1)
[ "$got" = "$SHA" ] || die "the bytes read back hash to $got, not $SHA"
stop_server
rec ""
rec "== a ${FILE_MIB} MiB file on PostgreSQL, read through another surveyd process vs psql \\copy of its pieces ($(date -u +%FT%TZ)), $ROUNDS rounds"
rec "mean: surveyd $(mibs "$(awk -v s="$SUM_SD" -v n="$ROUNDS" 'BEGIN {print s / n}')") MiB/s   psql $(mibs "$(awk -v s="$SUM_PG" -v n="$ROUNDS" 'BEGIN {print s / n}')") MiB/s   surveyd/psql $(awk -v a="$SUM_PG" -v b="$SUM_SD" 'BEGIN {printf "%.3f", a / b}') [target >= 0.5]"
rec "surveyd RSS: $((IDLE_KIB / 1024)) MiB idle before the measured reads, $((PEAK_MAX / 1024)) MiB at most during them (sampled every 50 ms); bytes read back hash to the stored sha256: yes"
