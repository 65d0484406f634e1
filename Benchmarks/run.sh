#!/usr/bin/env bash
# One benchmark run of surveyd against its storage floor, on this machine, with FULL durability.
#
#   Benchmarks/run.sh            # ~6–8 minutes; results in $BENCH_DIR (default /tmp/surveyd-bench)
#
# Steps: build release (own scratch path) · machine facts · a fresh data dir seeded through the CLI
# and the API (org, expired org, users, a 35-question survey) plus 10,000 stored responses ·
# the bare-SQLite floor (one txn per submission; groups of 8/32/128) · wrk at 64 connections:
# new submissions, replays, 1001 refusals, reads, the 70/20/10 mix, 1 MB uploads (RSS sampled) ·
# dd writing+fsyncing the same bytes · 512 keep-alive connections (RSS sampled) · the data dir
# topped up to 1,000,000 stored responses and new submissions again · a last submission load killed with kill -9
# mid-run, then every 2xx counted checked in the recovered database · the ratios and targets.
#
# Environment: PHASE_SECONDS (12) CONNECTIONS (64) THREADS (2) PORT (18080) BENCH_DIR SCRATCH
# (/tmp/bench-build) QUICK=1 (only the phases of targets 1 and 2) SURVEYD_SRC (package to build; default this repository) BIG_COUNT (1000000)
# FLOOR_SECONDS (3) PROFILE=1 (perf record the server during each phase; numbers then slightly lower)
# SERVER_ARGS (extra `surveyd serve` flags, e.g. "--http-threads 0") OTHER_MAX (1.0 CPU-s of other
# processes tolerated per phase) PHASE_ATTEMPTS (3) QUIET_WAIT (300 s).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SRC=${SURVEYD_SRC:-$ROOT}
SCRATCH=${SCRATCH:-/tmp/bench-build}
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
PORT=${PORT:-18080}
CONNS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
D=${PHASE_SECONDS:-12}
FLOOR_SECONDS=${FLOOR_SECONDS:-3}
BIG_COUNT=${BIG_COUNT:-1000000}
SMALL_COUNT=10000
READ_SET=2000                        # of the 10,000 seeded: read by reads/mix (ids repeat: 2,000 are enough)
REVIEW_SET=$((SMALL_COUNT - READ_SET))  # the rest, reviewed by the mix: 16,000 review steps, ~16 s of the mix at 10k/s
UPLOAD_BYTES=1048576
BASE="http://127.0.0.1:$PORT"
export PATH="/opt/swift/usr/bin:$PATH"
export LUA_PATH="$HERE/wrk/?.lua;;"

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

# --- prerequisites ------------------------------------------------------------------------------
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v gcc >/dev/null || need+=(gcc)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v jq >/dev/null || need+=(jq)
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get install -y "${need[@]}" >/dev/null
fi
ulimit -n 65536 2>/dev/null || ulimit -n 4096 || true

case "$WORK" in
    /|/tmp|/tmp/|"$HOME"|"$ROOT"|"$ROOT"/*) die "BENCH_DIR=$WORK would delete something that is not a benchmark dir" ;;
esac
[ ! -e "$WORK" ] || [ -f "$WORK/results.txt" ] || [ -z "$(ls -A "$WORK")" ] \
    || die "BENCH_DIR=$WORK exists and is not a previous benchmark dir (no results.txt); not deleting it"
rm -rf "$WORK"
mkdir -p "$WORK/ids" "$WORK/wrk"
cd "$WORK"
DATA="$WORK/data"
RESULTS="$WORK/results.txt"
: > "$RESULTS"
rec() { echo "$*" >> "$RESULTS"; }   # key=value lines, the run's raw numbers

# --- build --------------------------------------------------------------------------------------
log "building release (scratch $SCRATCH)"
t=$(date +%s)
swift build -c release --package-path "$SRC" --scratch-path "$SCRATCH" --product surveyd > "$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log"; die "release build"; }
BIN="$SCRATCH/release/surveyd"
log "built in $(( $(date +%s) - t )) s"
gcc -O2 -Wall -o "$WORK/floor-bin" "$HERE/floor/floor.c" -lsqlite3

# --- machine ------------------------------------------------------------------------------------
rec "machine.nproc=$(nproc)"
rec "machine.cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
rec "machine.mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
DEV=$(df --output=source "$WORK" | tail -1)
rec "machine.disk=$DEV $(df -h --output=fstype,size "$WORK" | tail -1 | xargs) rotational=$(cat /sys/block/$(basename "$DEV" | sed 's/[0-9]*$//')/queue/rotational 2>/dev/null || echo ?) $(lsblk -dno MODEL "$DEV" 2>/dev/null | xargs)"
rec "machine.kernel=$(uname -r)"
rec "machine.virt=$(systemd-detect-virt 2>/dev/null || lscpu | sed -n 's/^Hypervisor vendor: *//p')"
rec "software.sqlite=$(sqlite3 --version | cut -d' ' -f1) libmicrohttpd=$(pkg-config --modversion libmicrohttpd 2>/dev/null || echo ?) wrk=$(wrk -v 2>&1 | head -1 | cut -d' ' -f2)"
rec "software.swift=$(swift --version 2>&1 | head -1)"
rec "bench.connections=$CONNS threads=$THREADS phase_seconds=$D synchronous=FULL server_args=${SERVER_ARGS:-none}"

# --- server control -----------------------------------------------------------------------------
PID=
start_server() {
    # shellcheck disable=SC2086
    # --startup-check quick: the full integrity_check takes ~2 min at 1M responses and is not what is
    # measured here; the crash check below runs integrity_check itself.
    "$BIN" serve --data-dir "$DATA" --port "$PORT" --startup-check quick ${SERVER_ARGS:-} >> "$WORK/server.log" 2>> "$WORK/server.err" &
    PID=$!
    for _ in $(seq 1 2400); do   # up to ~2 min
        curl -sf "$BASE/healthz" >/dev/null 2>&1 && { find_writer; return 0; }
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    tail "$WORK/server.err" >&2
    die "server did not start"
}
stop_server() {   # graceful (SIGTERM): in-flight requests answered, exit 0
    kill -TERM "$PID"
    wait "$PID" || die "server exited with $? on SIGTERM"
    PID=
}
trap '[ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null; true' EXIT

rss_kb()  { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
hwm_kb()  { awk '/^VmHWM/ {print $2}' "/proc/$PID/status"; }
nthreads(){ awk '/^Threads/ {print $2}' "/proc/$PID/status"; }
proc_cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
# The writer thread: named surveyd-writer if the build names it; otherwise (Foundation's Thread.name
# does not reach the kernel on Linux) the one thread of an idle server, besides the main thread and
# libmicrohttpd's listener, that is not a dispatch worker.
WRITER_TID=
find_writer() {
    local t c cands=()
    for t in /proc/"$PID"/task/*; do
        c=$(cat "$t/comm" 2>/dev/null || true); t=${t##*/}
        [ "$c" = surveyd-writer ] && { WRITER_TID=$t; return; }
        [ "$t" != "$PID" ] && [ "$c" = "$(basename "$BIN" | cut -c1-15)" ] && cands+=("$t")
    done
    WRITER_TID=${cands[0]:-}
    [ ${#cands[@]} -eq 1 ] || log "warning: ${#cands[@]} candidate writer threads (${cands[*]:-none}); writer figures may be wrong"
}
writer_stats() {  # "cpu_ticks voluntary_switches" of the writer thread
    [ -n "$WRITER_TID" ] && [ -r /proc/"$PID"/task/"$WRITER_TID"/stat ] || { echo "0 0"; return; }
    echo "$(awk '{print $14 + $15}' /proc/"$PID"/task/"$WRITER_TID"/stat) $(awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$PID"/task/"$WRITER_TID"/status)"
}
# "commits jobs" of the writer so far, from /metrics (operator token); "0 0" when unavailable.
writer_groups() {
    { curl -s -m 2 -H "Authorization: Bearer $OPERATOR" "$BASE/metrics" 2>/dev/null || true; } \
        | awk '/^surveyd_writer_commits_total/ {c = $2} /^surveyd_writer_jobs_total/ {j = $2} END {print (c ? c : 0), (j ? j : 0)}'
}
cpu_jiffies() { awk '/^cpu / {print $2+$3+$4+$6+$7+$8+$9, $5, $6}' /proc/stat; }  # "busy idle iowait" (busy counts iowait)
# user+sys seconds of this shell's finished children (wrk), from the builtin `times` (which must
# run in this shell, not in a $(...) subshell): `times > F; children_cpu_s F`.
children_cpu_s() {
    tail -1 "$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.2f", t }'
}
# The machine must be otherwise idle: wait (up to QUIET_WAIT seconds) until other processes use less
# than 10 % of one core over 3 s, then go on either way and record what was seen.
wait_quiet() {
    local waited=0 b0 i0 w0 b1 i1 w1 busy
    while :; do
        read -r b0 i0 w0 <<< "$(cpu_jiffies)"; sleep 3; read -r b1 i1 w1 <<< "$(cpu_jiffies)"
        busy=$(( (b1 - b0) - (w1 - w0) ))   # jiffies busy over 3 s, both cores (300 = one core)
        [ "$busy" -lt 30 ] && break
        [ "$waited" -ge "${QUIET_WAIT:-300}" ] && { log "warning: the machine is busy ($busy/600 jiffies in 3 s): numbers will be lower"; break; }
        [ "$waited" -eq 0 ] && log "waiting for the machine to be quiet (other processes use $busy/600 jiffies in 3 s)"
        waited=$((waited + 3))
    done
    echo "$busy"
}
settle() { sync; sleep "${1:-2}"; }   # let writeback from the previous step finish before measuring
sampler() {  # samples VmRSS every 0.2 s into $1 until killed
    while kill -0 "$PID" 2>/dev/null; do rss_kb >> "$1" 2>/dev/null || true; nthreads >> "$1.threads" 2>/dev/null || true; sleep 0.2; done
}
api() {  # method path token [json] -> body on stdout; fails on non-2xx
    local out code
    out=$(curl -s -w '\n%{http_code}' -X "$1" "$BASE$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' ${4:+-d "$4"})
    code=${out##*$'\n'}
    [[ $code == 2* ]] || die "$1 $2 answered $code: ${out%$'\n'*}"
    printf '%s' "${out%$'\n'*}"
}
field() { sed -n "s/^$1 //p"; }

# --- a data dir, through the CLI and the API ----------------------------------------------------
log "seeding the data dir through the CLI and the API"
future=$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)
OPERATOR=$("$BIN" admin create-operator --data-dir "$DATA" | tail -1)
ORG=$("$BIN" admin create-org --name "Bench field team" --expires-at "$future" --data-dir "$DATA")
XORG=$("$BIN" admin create-org --name "Lapsed field team" --expires-at "$future" --data-dir "$DATA")
u=$("$BIN" admin create-user --org "$ORG" --name Collector --roles collector --data-dir "$DATA")
COLLECTOR_ID=$(echo "$u" | field userId); COLLECTOR=$(echo "$u" | tail -1)
REVIEWER=$("$BIN" admin create-user --org "$ORG" --name Reviewer --roles reviewer --data-dir "$DATA" | tail -1)
ADMIN=$("$BIN" admin create-user --org "$ORG" --name Admin --roles admin --data-dir "$DATA" | tail -1)
XCOLLECTOR=$("$BIN" admin create-user --org "$XORG" --name Collector --roles collector --data-dir "$DATA" | tail -1)
XADMIN=$("$BIN" admin create-user --org "$XORG" --name Admin --roles admin --data-dir "$DATA" | tail -1)
# A virtual table's shadow tables (the entity search index's entity_search_*) are made by its own
# CREATE VIRTUAL TABLE, so they are left out.
sqlite3 "$DATA/surveyd.sqlite" "SELECT sql||';' FROM sqlite_master m WHERE sql NOT NULL AND name NOT LIKE 'sqlite_%'
    AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.sql LIKE 'CREATE VIRTUAL TABLE%' AND m.name LIKE v.name || '\_%' ESCAPE '\\')" > "$WORK/schema.sql"

start_server
DEF=$(cat "$HERE/fixtures/survey.json")
publish() {  # org admin-token -> "surveyId versionId contentHash"
    local s v
    s=$(api POST "/v1/orgs/$1/surveys" "$2" '{"title":"Benchmark household survey","reviewRequired":true}' | jq -r .surveyId)
    v=$(api POST "/v1/orgs/$1/surveys/$s/versions" "$2" "{\"definition\":$DEF}")
    echo "$s $(echo "$v" | jq -r .surveyVersionId) $(echo "$v" | jq -r .contentHash)"
}
read -r SURVEY VERSION HASH <<< "$(publish "$ORG" "$ADMIN")"
read -r _ XVERSION XHASH <<< "$(publish "$XORG" "$XADMIN")"
# The second organization's subscription lapses (the CLI writes beside the running server).
"$BIN" admin renew --org "$XORG" --until 2020-01-01T00:00:00Z --data-dir "$DATA" >/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/v1/orgs/$XORG/responses" -H "Authorization: Bearer $XCOLLECTOR" \
    -H 'Content-Type: application/json' \
    -d "{\"answers\":$(cat "$HERE/fixtures/answers.json"),\"clientSubmissionId\":\"probe-0001\",\"contentHash\":\"$XHASH\",\"surveyVersionId\":\"$XVERSION\"}")
[ "$code" = 402 ] || die "the lapsed organization answered $code, not 402"
stop_server
# For Benchmarks/profile.sh and for poking at the data dir afterwards (benchmark-only tokens).
cat > "$WORK/env.sh" <<EOF
export ORG=$ORG XORG=$XORG SURVEY=$SURVEY VERSION=$VERSION HASH=$HASH XVERSION=$XVERSION XHASH=$XHASH
export COLLECTOR=$COLLECTOR COLLECTOR_ID=$COLLECTOR_ID XCOLLECTOR=$XCOLLECTOR REVIEWER=$REVIEWER ADMIN=$ADMIN OPERATOR=$OPERATOR
EOF

seed() {  # count ids-file review-state
    python3 "$HERE/seed_responses.py" --db "$DATA/surveyd.sqlite" --org "$ORG" --survey "$SURVEY" --version "$VERSION" \
        --submitter "$COLLECTOR_ID" --answers "$HERE/fixtures/answers.json" --content-hash "$HASH" --count "$1" \
        ${2:+--ids-out "$2"} --review-state submitted "${@:3}"
}
log "seeding $SMALL_COUNT stored responses"
seed "$READ_SET" "$WORK/read.ids" --end-ago-s 120 > /dev/null
seed "$REVIEW_SET" "$WORK/review.ids" --end-ago-s 60 > /dev/null
rec "stored.before_small=$(sqlite3 "$DATA/surveyd.sqlite" 'SELECT COUNT(*) FROM responses')"

# --- the floor (the server is stopped: nothing else runs) ---------------------------------------
log "floor: bare SQLite, FULL, same rows per submission"
settle 3
rec "quiet.before_floor_jiffies=$(wait_quiet)"
FLOOR_ARGS=(--schema "$WORK/schema.sql" --answers "$HERE/fixtures/answers.json" --seconds "$FLOOR_SECONDS" --prefill $SMALL_COUNT)
mkdir -p "$WORK/floor-db"
{
    "$WORK/floor-bin" --db "$WORK/floor-db/a.sqlite" "${FLOOR_ARGS[@]}"
    "$WORK/floor-bin" --db "$WORK/floor-db/b.sqlite" "${FLOOR_ARGS[@]}" --savepoints
    "$WORK/floor-bin" --db "$WORK/floor-db/c.sqlite" "${FLOOR_ARGS[@]}" --savepoints --pragma "PRAGMA temp_store=MEMORY" | sed 's/savepoints=1/savepoints=1+temp_store_memory/'
} | tee "$WORK/floor.txt" >&2
rm -rf "$WORK/floor-db"
while read -r _ g s _ _ r; do rec "floor.${g#group=}.${s#savepoints=}=${r#rate=}"; done < "$WORK/floor.txt"
FLOOR1=$(awk '/group=1 savepoints=0 / {sub("rate=","",$6); print $6}' "$WORK/floor.txt")

# --- the server under load ----------------------------------------------------------------------
start_server
sleep 2
rec "rss.idle_start_kb=$(rss_kb) threads=$(nthreads)"

RUN_TAG_BASE="r$(date +%s)a"
export ORG VERSION HASH FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids" THREADS
export IDS_FILE="$WORK/read.ids" REVIEW_IDS_FILE="$WORK/review.ids" REVIEWER_TOKEN="$REVIEWER" UPLOAD_BYTES

# phase NAME SCRIPT CONNECTIONS SECONDS [extra env assignments...]: runs wrk, records its RESULT line,
# the server's CPU and the writer thread's CPU and wake-ups during the phase. This machine has two
# cores: if other processes took more than OTHER_MAX CPU-seconds during the phase (another build,
# another test run), the attempt is recorded as DISCARDED and the phase repeated once the machine
# is quiet (at most PHASE_ATTEMPTS times; the crash phase is never repeated).
phase() {
    local attempt other
    for attempt in $(seq 1 "${PHASE_ATTEMPTS:-3}"); do
        RUN_TAG="$RUN_TAG_BASE$attempt" phase_once "$@"   # a repeated attempt must send new ids, not replays
        other=$(echo "$LAST" | sed -n 's/.* other_cpu_s=\([0-9.]*\).*/\1/p')
        if [ -n "${KILL_AFTER:-}" ] || awk -v o="${other:-0}" -v m="${OTHER_MAX:-1.0}" 'BEGIN { exit !(o <= m) }'; then
            break
        fi
        rec "DISCARDED ${LAST#RESULT }"
        [ "$attempt" -lt "${PHASE_ATTEMPTS:-3}" ] || { log "$1: still contaminated after $attempt attempts; keeping the last"; break; }
        log "$1: other processes used ${other} CPU-s during the phase; repeating it when the machine is quiet"
        wait_quiet > /dev/null
    done
    rec "$LAST"
    log "$1: $(echo "$LAST" | grep -o 'ok_rps=[0-9.]*') $(echo "$LAST" | grep -o 'p99_ms=[0-9.]*') $(echo "$LAST" | grep -o 'statuses=[^ ]*') $(echo "$LAST" | grep -o 'server_us_per_req=[0-9]*') $(echo "$LAST" | grep -o 'other_cpu_s=[0-9.]*') $(echo "$LAST" | grep -o 'writer_wakeups=[0-9a-z/]*') $(echo "$LAST" | grep -o 'jobs_per_commit=[0-9.]*')"
}
LAST=
phase_once() {
    local name=$1 script=$2 conns=$3 secs=$4; shift 4
    local c0 w0 w1 c1 pp=
    settle 2
    local g0 g1; g0=$(writer_groups)
    c0=$(proc_cpu_ticks); w0=$(writer_stats); read -r sb0 si0 sw0 <<< "$(cpu_jiffies)"; times > "$WORK/.times"; local k0; k0=$(children_cpu_s "$WORK/.times")
    if [ "${PROFILE:-0}" = 1 ]; then
        perf record -F 499 -g -p "$PID" -o "$WORK/perf-$name.data" >/dev/null 2>&1 & pp=$!
    fi
    local killer=
    if [ -n "${KILL_AFTER:-}" ]; then ( sleep "$KILL_AFTER"; kill -9 "$PID" ) & killer=$!; fi
    env PHASE="$name" RUN_TAG="$RUN_TAG" TOKEN="${TOKEN:-$COLLECTOR}" "$@" \
        wrk -t"$THREADS" -c"$conns" -d"${secs}s" --timeout 10s --latency -s "$HERE/wrk/$script" "$BASE" > "$WORK/wrk/$name.txt" 2>&1 || true
    if [ -n "$pp" ]; then kill -INT "$pp"; wait "$pp" || true; fi
    if [ -n "$killer" ]; then wait "$killer" || true; fi
    c1=$(proc_cpu_ticks 2>/dev/null || echo "$c0"); w1=$(writer_stats 2>/dev/null || echo "$w0"); g1=$(writer_groups); read -r sb1 si1 sw1 <<< "$(cpu_jiffies)"
    times > "$WORK/.times"; local k1; k1=$(children_cpu_s "$WORK/.times")
    local line; line=$(grep '^RESULT' "$WORK/wrk/$name.txt" || true)
    [ -n "$line" ] || { cat "$WORK/wrk/$name.txt" >&2; die "wrk phase $name printed no RESULT"; }
    read -r wc0 ws0 <<< "$w0"; read -r wc1 ws1 <<< "$w1"
    # CPU: the server's own, and the whole machine's (busy = not idle and not iowait; the rest of
    # busy is mostly wrk). Per request: server CPU microseconds per answered request.
    local hz; hz=$(getconf CLK_TCK)
    local tot=$(( (sb1 - sb0) + (si1 - si0) ))
    local reqs; reqs=$(echo "$line" | sed 's/.* requests=\([0-9]*\).*/\1/')
    LAST="$line server_cpu_s=$(awk -v t=$((c1 - c0)) -v h="$hz" 'BEGIN {printf "%.2f", t / h}') server_us_per_req=$(awk -v t=$((c1 - c0)) -v h="$hz" -v n="$reqs" 'BEGIN {printf "%.0f", (n > 0 ? t / h * 1e6 / n : 0)}') machine_busy_pct=$(awk -v b=$(( (sb1 - sb0) - (sw1 - sw0) )) -v t="$tot" 'BEGIN {printf "%.0f", (t > 0 ? 100 * b / t : 0)}') machine_iowait_pct=$(awk -v w=$((sw1 - sw0)) -v t="$tot" 'BEGIN {printf "%.0f", (t > 0 ? 100 * w / t : 0)}') wrk_cpu_s=$(awk -v a="$k0" -v b="$k1" 'BEGIN {printf "%.2f", b - a}') other_cpu_s=$(awk -v b=$(( (sb1 - sb0) - (sw1 - sw0) )) -v h="$hz" -v s=$((c1 - c0)) -v k0="$k0" -v k1="$k1" 'BEGIN {o = b / h - s / h - (k1 - k0); printf "%.2f", (o > 0 ? o : 0)}') writer_cpu_ticks=$( [ "$wc1" -ge "$wc0" ] && echo $((wc1 - wc0)) || echo n/a) writer_wakeups=$( [ "$ws1" -ge "$ws0" ] && echo $((ws1 - ws0)) || echo n/a) $(echo "$g0 $g1" | awk '{c = $3 - $1; j = $4 - $2; printf "commits=%d jobs_per_commit=%.1f", c, (c > 0 ? j / c : 0)}')"
}
value() {  # value PHASE KEY -> from the phase's RESULT line (empty when the phase did not run)
    { grep "^RESULT phase=$1 " "$RESULTS" || true; } | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

log "phases at $CONNS connections, ${D}s each"
rec "quiet.before_phases_jiffies=$(wait_quiet)"
# Warm-up, not counted: the first seconds of writes after a start grow a fresh WAL file (block
# allocation on every fsync) and fill caches; the measured phases start after it.
phase warmup submit.lua "$CONNS" 4
phase submit submit.lua "$CONNS" "$D"
phase replay replay.lua "$CONNS" "$D"
TOKEN=$XCOLLECTOR phase refusal refusal.lua "$CONNS" "$D" ORG="$XORG" VERSION="$XVERSION" HASH="$XHASH"
if [ "${QUICK:-0}" != 1 ]; then   # QUICK=1: targets 1 and 2 only (submit, replay, refusal), ~3 min
phase read read.lua "$CONNS" "$D"
phase mix mix.lua "$CONNS" "$D"

: > "$WORK/rss-upload"; sampler "$WORK/rss-upload" & SP=$!
# 400 MB/s of uploads keep the kernel's writeback threads busy: that CPU is the phase's own.
OTHER_MAX=${OTHER_MAX_UPLOAD:-4.0} phase upload upload.lua "$CONNS" "$D"
kill "$SP"; wait "$SP" 2>/dev/null || true
rec "rss.upload_max_kb=$(sort -n "$WORK/rss-upload" | tail -1) hwm_kb=$(hwm_kb) threads_max=$(sort -n "$WORK/rss-upload.threads" | tail -1)"
UPLOADS_OK=$(value upload ok)
log "dd: $UPLOADS_OK x 1 MiB, conv=fsync"
dd if=/dev/zero of="$WORK/dd.bin" bs=1M count="$UPLOADS_OK" conv=fsync 2> "$WORK/dd.txt"
DD_BYTES=$(awk '/bytes/ {print $1}' "$WORK/dd.txt"); DD_SECS=$(awk '/bytes/ {print $(NF-3)}' "$WORK/dd.txt" | tr , .)
rm -f "$WORK/dd.bin"
rec "dd.bytes=$DD_BYTES seconds=$DD_SECS"

: > "$WORK/rss-hold"; sampler "$WORK/rss-hold" & SP=$!
phase hold512 hold.lua 512 10 HOLD_MS=1000
kill "$SP"; wait "$SP" 2>/dev/null || true
rec "rss.hold512_max_kb=$(sort -n "$WORK/rss-hold" | tail -1) hwm_kb=$(hwm_kb) threads_max=$(sort -n "$WORK/rss-hold.threads" | tail -1)"
sleep 3
rec "rss.idle_after_kb=$(rss_kb) threads=$(nthreads)"
rec "wal.bytes_after_small=$(stat -c %s "$DATA/surveyd.sqlite-wal" 2>/dev/null || echo 0)"

# --- 1,000,000 stored ---------------------------------------------------------------------------
stop_server
STORED=$(sqlite3 "$DATA/surveyd.sqlite" 'SELECT COUNT(*) FROM responses')
ADD=$(( BIG_COUNT - STORED ))
log "seeding $ADD more stored responses (to $BIG_COUNT)"
t=$(date +%s)
seed "$ADD" "" --end-ago-s 600 --spacing-ms 5 > /dev/null
rec "seed.big_rows=$ADD seconds=$(( $(date +%s) - t )) db_bytes=$(stat -c %s "$DATA/surveyd.sqlite")"
start_server
sleep 1
phase warmup1m submit.lua "$CONNS" 4
rec "stored.before_big=$(sqlite3 "$DATA/surveyd.sqlite" 'SELECT COUNT(*) FROM responses')"
phase submit1m submit.lua "$CONNS" "$D"

# --- kill -9 under load, then every counted 2xx must be stored ----------------------------------
log "kill -9 during a submission load"
KILL_AFTER=$(( D / 2 )) phase crash submit.lua "$CONNS" "$D"
wait "$PID" 2>/dev/null || true
PID=
python3 "$HERE/verify_ids.py" --db "$DATA/surveyd.sqlite" --blobs "$DATA/blobs" --ids-dir "$WORK/ids" | tee -a "$RESULTS" >&2
if "$BIN" help 2>&1 | grep -q ' check'; then
    "$BIN" check --data-dir "$DATA" > "$WORK/check.txt" 2>&1 && rec "check.exit=0" || rec "check.exit=$?"
fi

# The floor again, now that the disk has been busy for minutes: how much the fsync rate drifts.
settle 3
"$WORK/floor-bin" --db "$WORK/floor-end.sqlite" "${FLOOR_ARGS[@]}" --groups 1 | tee -a "$WORK/floor.txt" >&2
rec "floor.end.1.0=$(tail -1 "$WORK/floor.txt" | sed 's/.*rate=//')"
rm -f "$WORK"/floor-end.sqlite*
fi   # QUICK

# --- ratios -------------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
SUB=$(value submit ok_rps); SUB1M=$(value submit1m ok_rps)
REPLAY=$(value replay ok_rps); REFUSAL=$(value refusal rps)
met() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { ok = (op == ">=") ? (v >= t) : (v < t); print ok ? "met" : "MISSED" }'; }
phase_table() {
    printf '%-9s %9s %9s %8s %8s %8s %11s %9s %8s %8s %8s  %s\n' phase requests 2xx/s rps p50_ms p99_ms server_us/req busy% wrk_cpu other_cpu wakeups statuses
    grep '^RESULT phase=' "$RESULTS" | grep -v 'phase=verify' | while read -r l; do
        g() { echo "$l" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
        printf '%-9s %9s %9s %8s %8s %8s %11s %9s %8s %8s %8s  %s\n' "$(g phase)" "$(g requests)" "$(g ok_rps)" "$(g rps)" "$(g p50_ms)" "$(g p99_ms)" \
            "$(g server_us_per_req)" "$(g machine_busy_pct)" "$(g wrk_cpu_s)" "$(g other_cpu_s)" "$(g writer_wakeups)" "$(g statuses)"
    done
    echo "raw numbers: $RESULTS; wrk output: $WORK/wrk/"
}
if [ "${QUICK:-0}" = 1 ]; then   # targets 1 and 2 only
    {
        echo
        echo "== surveyd benchmark, QUICK ($(date -u +%FT%TZ)), $(nproc) cores, FULL, $CONNS connections, ${D}s phases"
        echo "floor, one txn per submission:          $FLOOR1 /s"
        echo "new submissions (10k stored):           $SUB /s   = $(ratio "$SUB" "$FLOOR1")x floor     p99 $(value submit p99_ms) ms   [target 1: >= 3x, p99 <= 50 ms: $(met "$(ratio "$SUB" "$FLOOR1")" ">=" 3) / $(met "$(value submit p99_ms)" "<" 50.0001)]"
        echo "replays:                                $REPLAY /s   = $(ratio "$REPLAY" "$SUB")x new        p99 $(value replay p99_ms) ms   [target 2: >= 5x: $(met "$(ratio "$REPLAY" "$SUB")" ">=" 5)]"
        echo "1001 refusals:                          $REFUSAL /s   writer wake-ups during the phase: $(value refusal writer_wakeups)   [target 2: 0 => never takes the write lock: $(met "$(value refusal writer_wakeups)" "<" 1)]"
        echo
        phase_table
    } | tee -a "$WORK/summary.txt"
    exit 0
fi
UP_BPS=$(awk -v n="$UPLOADS_OK" -v b="$UPLOAD_BYTES" -v s="$(value upload seconds)" 'BEGIN { printf "%.0f", n * b / s }')
DD_BPS=$(awk -v b="$DD_BYTES" -v s="$DD_SECS" 'BEGIN { printf "%.0f", b / s }')
{
    echo
    echo "== surveyd benchmark ($(date -u +%FT%TZ)), $(nproc) cores, FULL, $CONNS connections, ${D}s phases"
    echo "floor, one txn per submission:          $FLOOR1 /s   (again at the end of the run: $(sed -n 's/^floor.end.1.0=//p' "$RESULTS") /s)"
    echo "new submissions (10k stored):           $SUB /s   = $(ratio "$SUB" "$FLOOR1")x floor     p99 $(value submit p99_ms) ms   [target 1: >= 3x, p99 <= 50 ms: $(met "$(ratio "$SUB" "$FLOOR1")" ">=" 3) / $(met "$(value submit p99_ms)" "<" 50.0001)]"
    echo "replays:                                $REPLAY /s   = $(ratio "$REPLAY" "$SUB")x new        p99 $(value replay p99_ms) ms   [target 2: >= 5x: $(met "$(ratio "$REPLAY" "$SUB")" ">=" 5)]"
    echo "1001 refusals:                          $REFUSAL /s   writer wake-ups during the phase: $(value refusal writer_wakeups)   [target 2: 0 => never takes the write lock: $(met "$(value refusal writer_wakeups)" "<" 1)]"
    echo "reads:                                  $(value read ok_rps) /s   p99 $(value read p99_ms) ms"
    echo "mix 70/20/10:                           $(value mix rps) /s   p99 $(value mix p99_ms) ms   statuses $(value mix statuses)"
    echo "new submissions (1M stored):            $SUB1M /s   = $(ratio "$SUB1M" "$SUB")x 10k-stored   p99 $(value submit1m p99_ms) ms   [target 3: >= 0.8x: $(met "$(ratio "$SUB1M" "$SUB")" ">=" 0.8)]"
    echo "1 MB uploads:                           $UPLOADS_OK in $(value upload seconds) s = $((UP_BPS / 1048576)) MiB/s; dd $((DD_BPS / 1048576)) MiB/s = $(ratio "$UP_BPS" "$DD_BPS")x   [target 4: >= 0.5x: $(met "$(ratio "$UP_BPS" "$DD_BPS")" ">=" 0.5)]"
    IDLE0=$(sed -n 's/^rss.idle_start_kb=\([0-9]*\).*/\1/p' "$RESULTS"); IDLE1=$(sed -n 's/^rss.idle_after_kb=\([0-9]*\).*/\1/p' "$RESULTS")
    echo "RSS idle (start / after load):          $IDLE0 / $IDLE1 kB   [target 5: < 50 MB idle: at start $(met "$IDLE0" "<" 51200), after load $(met "$IDLE1" "<" 51200)]"
    echo "RSS with 64 uploads (max sampled):      $(sed -n 's/^rss.upload_max_kb=\([0-9]*\).*/\1/p' "$RESULTS") kB   [target 4: < 100 MB: $(met "$(sed -n 's/^rss.upload_max_kb=\([0-9]*\).*/\1/p' "$RESULTS")" "<" 102400)]"
    echo "RSS with 512 keep-alive (max sampled):  $(sed -n 's/^rss.hold512_max_kb=\([0-9]*\).*/\1/p' "$RESULTS") kB   [target 5: < 200 MB: $(met "$(sed -n 's/^rss.hold512_max_kb=\([0-9]*\).*/\1/p' "$RESULTS")" "<" 204800)]"
    echo "kill -9: $(grep '^RESULT phase=verify' "$RESULTS" | cut -d' ' -f3-)   [target 6: $(grep -q 'phase=verify .* ok=1' "$RESULTS" && echo met || echo MISSED)]"
    echo
    phase_table
} | tee -a "$WORK/summary.txt"
