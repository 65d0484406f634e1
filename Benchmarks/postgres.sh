#!/usr/bin/env bash
# New submissions on PostgreSQL — one surveyd process, three processes on the same database — beside
# pgbench running the same transaction against the same database, in the same minutes.
#
#   Benchmarks/postgres.sh [BIN] [ROUNDS]     # BIN: default a release build made here (--scratch-path
#                                              # /tmp/bench-build); ROUNDS: default 4; ~1 min a round
#
# ROUNDS: with four modes, a multiple of 4 puts every mode in every position of the order once
# (with WRITE=0, a multiple of 3; with SERIAL=1, of 5).
#
# Steps: one throwaway PostgreSQL 15 cluster (scripts/pg_cluster.sh: default settings, fsync and
# synchronous_commit on, so a 2xx is durable as with SQLite's FULL) · one organization, a collector
# and the 35-question survey seeded through the CLI and a first surveyd process, which then takes
# $PRIME s (10) of submissions on the freshly migrated database, no statistics yet ("fresh": its
# rate is set against the steady one-process rate), before an ANALYZE (planner statistics, as in
# service: the VACUUM (ANALYZE) before the first measurement, or with VACUUMS=0 an ANALYZE, which
# ANALYZE=0 leaves to autovacuum) · then ROUNDS rounds, the order turning each round,
# every measurement $WARM s (3) of load not counted and $SECS s (8) counted:
#   one    one surveyd process, wrk -t2 -c$CONNECTIONS Benchmarks/wrk/submit.lua → accepted/s
#   three  three surveyd processes on three ports, one wrk -t1 per port, the connections split
#          (22+21+21 of 64)                                                    → accepted/s, summed
#   pgbench  pgbench -c$PGBENCH_CLIENTS -j2 -M prepared Benchmarks/pg/submit.sql: surveyd's
#          transaction for one submission, statement for statement and round trip for round trip
#          (BEGIN, SAVEPOINT, the org row FOR SHARE, the replay check, the organization and the
#          caller's token in one pipeline; the response INSERT, the audit INSERT, which takes the
#          audit lock, and COMMIT in a second; under load surveyd sends the next submission's
#          first pipeline with the COMMIT, in one round trip)                          → tps
#   write  (WRITE=1, the default) pgbench with Benchmarks/pg/write.sql: the same transaction
#          without its reads, the reference of the measurements before 2026-12-04       → tps
#   serial (SERIAL=1; off by default) the statements of write.sql with
#          Benchmarks/pg/write-serial.sql, one round trip each, as a client that waits for
#          every answer                                                                → tps
# Per measurement it also reads CPU from /proc: surveyd's, PostgreSQL's (the postmaster, its
# backends and the ones it reaped), the load generator's (wrk or pgbench) and everyone else's
# ("other": kernel threads, and another build or test on the machine). Before each measurement
# it makes a CHECKPOINT (CHECKPOINTS=1, the default; the cluster's max_wal_size is 8GB, so no
# other checkpoint starts during one): every measurement then starts at the same point of
# PostgreSQL's checkpoint cycle, with the same share of full-page images to write. Left to the
# WAL volume, a checkpoint started every 40 s or so, at a different point of each measurement:
# one process against pgbench moved 0.70-1.05x from round to round, 0.67-0.73x with the
# checkpoints. Autovacuum is off (VACUUMS=1, the default) and a VACUUM (ANALYZE) goes before
# each CHECKPOINT instead: left on, it vacuumed and analyzed the two growing tables about once a
# minute (about 1 s of PostgreSQL's CPU, spread over 10-20 s by its cost delay, and the pages it
# writes) inside whichever measurement was running. Each
# measurement now leaves out what the upkeep of its rows costs, as pgbench's do (the seconds the
# VACUUM took are recorded). Then it waits up to QUIET_WAIT s (30) for the machine to be quiet; a
# measurement during which others used more than OTHER_MAX CPU-s (SECS/4: at rest this VM's kernel threads
# use ~0.15 a second) is recorded as DISCARDED and made again, at most ATTEMPTS (2) times; the
# last one is kept, marked with *. Prints per round and in total: the rates, the ratios one/pgbench and
# three/pgbench, CPU µs per request, and surveyd's context switches per request (all its threads,
# voluntary and involuntary). Results: $BENCH_DIR/results.txt (default
# /tmp/surveyd-pgbench), PostgreSQL's log (checkpoints, autovacuum) in postgres.log there; the
# cluster and data dirs are removed on exit, also on failure.
#
# Where the CPU goes: surveyd, PostgreSQL and the load generator share the machine's cores
# (PIN=0, the default), or PIN=1 gives PostgreSQL the upper half of the cores (core 1 of 2) and
# everything else the lower half, as a deployment with the database on a host of its own: then
# both surveyd and pgbench are held to what the database can do, and the ratio says how much of
# it a submission through surveyd costs beside the bare transaction. WRITERS sets the processes'
# --database-writers (the server's default when unset); WRITERS_EACH, when set, those of each of
# the three processes instead (WRITERS=6 WRITERS_EACH=2: the same write connections in total);
# HTTP_THREADS their --http-threads.
#
# Where surveyd's CPU goes: PERF=1 records each one-process measurement with `perf record`
# (PERF_FREQ Hz, 499; --call-graph PERF_CALL_GRAPH, dwarf,16384: the VM has no frame pointers
# through the Swift runtime) into $BENCH_DIR/perf-one-rN.data, kept after the run; read it with
# `perf report -i FILE --children --sort sym | swift demangle`. Those measurements count perf's
# own cost in surveyd's CPU and rate.
#
# Environment: SECS (8) WARM (3) PRIME (10) ANALYZE (1) WRITE (1) SERIAL (0) CONNECTIONS (64: wrk's
# connections, and pgbench's clients unless PGBENCH_CLIENTS says otherwise) LOG (0; 1 = request log
# on) PG_PORT (15434) PORT (18281; the three processes use PORT..PORT+2) PG_OPTIONS (extra -c
# settings for the cluster) BENCH_DIR SCRATCH (/tmp/bench-build) OTHER_MAX (SECS/4) ATTEMPTS (2)
# QUIET_WAIT (30) PIN (0) WRITERS WRITERS_EACH HTTP_THREADS CHECKPOINTS (1) VACUUMS (1) PERF (0) PERF_FREQ
# PERF_CALL_GRAPH.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-}; ROUNDS=${2:-4}
SECS=${SECS:-8}; WARM=${WARM:-3}; WRITE=${WRITE:-1}; SERIAL=${SERIAL:-0}
CONNECTIONS=${CONNECTIONS:-64}; PGBENCH_CLIENTS=${PGBENCH_CLIENTS:-$CONNECTIONS}
WORK=${BENCH_DIR:-/tmp/surveyd-pgbench}
PG_PORT=${PG_PORT:-15434}; PORT=${PORT:-18281}
PORTS=("$PORT" $((PORT + 1)) $((PORT + 2)))
PGBIN=/usr/lib/postgresql/15/bin
HZ=$(getconf CLK_TCK)
export PATH="/opt/swift/usr/bin:$PATH"

# shellcheck source=bench_dir.sh
source "$HERE/bench_dir.sh"
command -v wrk > /dev/null || die "wrk is not installed"
command -v jq > /dev/null || die "jq is not installed"
[ "${PERF:-0}" = 1 ] && { command -v perf > /dev/null || die "PERF=1 needs perf (apt-get install linux-perf)"; }
[ -x "$PGBIN/pgbench" ] || die "no $PGBIN/pgbench (scripts/setup.sh installs PostgreSQL 15)"
ulimit -n 65536 2>/dev/null || ulimit -n 4096 || true

fresh_bench_dir postgres
mkdir -p "$WORK/ids" "$WORK/out"
rec() { echo "$*" >> "$RESULTS"; }   # raw lines recorded, not printed (log prints what matters)

# --- clean-up, whatever happens -----------------------------------------------------------------
SERVER_PIDS=()
cleanup() {
    local p
    for p in "${SERVER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done   # wrk / pgbench of an interrupted run
    wait 2>/dev/null || true
    cp "$WORK/pg/server.log" "$WORK/postgres.log" 2>/dev/null || true   # checkpoints, autovacuum
    "$ROOT/scripts/pg_cluster.sh" stop "$WORK/pg" 2>/dev/null || true
    rm -rf "$WORK/pg" "$WORK"/data*
}
trap cleanup EXIT

# --- build --------------------------------------------------------------------------------------
release_bin

# --- the cluster --------------------------------------------------------------------------------
log "starting PostgreSQL (port $PG_PORT, $WORK/pg)"
# max_wal_size: with a CHECKPOINT before each measurement (CHECKPOINTS=1), none starts inside one.
AUTOVACUUM=; [ "${VACUUMS:-1}" = 1 ] && AUTOVACUUM="-c autovacuum=off"
URL=$(PG_CLUSTER_OPTIONS="-c log_autovacuum_min_duration=0 -c max_wal_size=8GB $AUTOVACUUM ${PG_OPTIONS:-}" "$ROOT/scripts/pg_cluster.sh" start "$WORK/pg" "$PG_PORT")
PG=(-h "$WORK/pg" -p "$PG_PORT" -U postgres)
psql_c() { psql "${PG[@]}" -d postgres -XAtq -c "$1"; }
POSTMASTER=$(head -1 "$WORK/pg/data/postmaster.pid")
CORES=$(nproc)   # before pinning: nproc counts the cores this process may run on
if [ "${PIN:-0}" = 1 ]; then
    command -v taskset > /dev/null || die "PIN=1 needs taskset (util-linux)"
    [ "$CORES" -ge 2 ] || die "PIN=1 needs at least 2 cores"
    LOW="0-$(( CORES / 2 - 1 ))"; HIGH="$(( CORES / 2 ))-$(( CORES - 1 ))"
    # The postmaster and the processes it has started now; backends it forks later inherit it.
    for p in "$POSTMASTER" $(pgrep -P "$POSTMASTER"); do taskset -a -p -c "$HIGH" "$p" > /dev/null; done
    taskset -p -c "$LOW" $$ > /dev/null   # this script, and so surveyd, wrk and pgbench
fi
rec "machine.nproc=$CORES cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1) mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
rec "software.postgres=$(psql_c 'SHOW server_version') wrk=$(wrk -v 2>&1 | head -1 | cut -d' ' -f2) checkout=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)$( [ -n "$(git -C "$ROOT" status --porcelain Sources 2>/dev/null)" ] && echo +changes) bin=$BIN"
rec "postgres.settings=$(psql_c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN
    ('fsync','synchronous_commit','wal_sync_method','full_page_writes','shared_buffers','max_connections','wal_level','checkpoint_timeout','max_wal_size','commit_delay','autovacuum')")"
rec "bench.rounds=$ROUNDS secs=$SECS warm=$WARM wrk_connections=$CONNECTIONS pgbench_clients=$PGBENCH_CLIENTS write=$WRITE serial=$SERIAL prime=${PRIME:-10} analyze=${ANALYZE:-1} pg_options=${PG_OPTIONS:-none} checkpoints=${CHECKPOINTS:-1} vacuums=${VACUUMS:-1} pin=${PIN:-0}${LOW:+ (postgres on cores $HIGH, the rest on $LOW)} writers=${WRITERS:-default} writers_each=${WRITERS_EACH:-${WRITERS:-default}} http_threads=${HTTP_THREADS:-default}"

# --- seed: the CLI, then the API of a first process ---------------------------------------------
log "seeding an organization, a collector and the survey"
future=$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)
admin() { "$BIN" admin "$@" --data-dir "$WORK/data1" --database-url "$URL" 2>> "$WORK/admin.log"; }
admin create-operator > /dev/null
ORG=$(admin create-org --name "Bench field team" --expires-at "$future")
u=$(admin create-user --org "$ORG" --name Collector --roles collector)
COLLECTOR_ID=$(echo "$u" | sed -n 's/^userId //p'); COLLECTOR=$(echo "$u" | tail -1)
ADMIN=$(admin create-user --org "$ORG" --name Admin --roles admin | tail -1)

start_servers() {  # N: start N processes (data dirs data1..dataN, ports PORTS[0..N-1]), wait until healthy
    local i p logging=(--no-log) tuning=(); [ "${LOG:-0}" = 1 ] && logging=()
    local writers=${WRITERS:-}; [ "$1" -gt 1 ] && writers=${WRITERS_EACH:-$writers}
    [ -n "$writers" ] && tuning+=(--database-writers "$writers")
    [ -n "${HTTP_THREADS:-}" ] && tuning+=(--http-threads "$HTTP_THREADS")
    SERVER_PIDS=()
    for i in $(seq 1 "$1"); do
        "$BIN" serve --data-dir "$WORK/data$i" --port "${PORTS[$((i - 1))]}" --database-url "$URL" --startup-check quick "${logging[@]}" "${tuning[@]}" \
            >> "$WORK/server$i.log" 2>&1 &
        SERVER_PIDS+=($!)
    done
    for i in $(seq 1 "$1"); do
        p=${PORTS[$((i - 1))]}
        for _ in $(seq 1 600); do
            curl -sf "http://127.0.0.1:$p/healthz" > /dev/null 2>&1 && continue 2
            kill -0 "${SERVER_PIDS[$((i - 1))]}" 2>/dev/null || break
            sleep 0.05
        done
        tail "$WORK/server$i.log" >&2; die "surveyd on port $p did not start"
    done
}
stop_servers() {
    local p
    for p in "${SERVER_PIDS[@]}"; do kill -TERM "$p"; done
    for p in "${SERVER_PIDS[@]}"; do wait "$p" || die "surveyd $p exited with $? on SIGTERM"; done
    SERVER_PIDS=()
}
api() {  # method path token json -> body; fails on non-2xx
    local out code
    out=$(curl -s -w '\n%{http_code}' -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' -d "$4")
    code=${out##*$'\n'}
    [[ $code == 2* ]] || die "$1 $2 answered $code: ${out%$'\n'*}"
    printf '%s' "${out%$'\n'*}"
}
start_servers 1
SURVEY=$(api POST "/v1/orgs/$ORG/surveys" "$ADMIN" '{"title":"Benchmark household survey","reviewRequired":true}' | jq -r .surveyId)
v=$(api POST "/v1/orgs/$ORG/surveys/$SURVEY/versions" "$ADMIN" "{\"definition\":$(cat "$HERE/fixtures/survey.json")}")
VERSION=$(echo "$v" | jq -r .surveyVersionId); HASH=$(echo "$v" | jq -r .contentHash)

# --- the measurements ---------------------------------------------------------------------------
export LUA_PATH="$HERE/wrk/?.lua;;" FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids" ORG VERSION HASH TOKEN="$COLLECTOR"
DIGEST_HEX=$(printf '%s' "$(cat "$HERE/fixtures/answers.json")" | sha256sum | cut -d' ' -f1)
PGBENCH_VARS=(-D "org=$ORG" -D "user=$COLLECTOR_ID" -D "survey=$SURVEY" -D "version=$VERSION"
    -D "answers=$(cat "$HERE/fixtures/answers.json")" -D "digest=sha256:$DIGEST_HEX" -D "sha256=\\x$DIGEST_HEX"
    -D "tokenhash=\\x$(printf '%s' "$COLLECTOR" | sha256sum | cut -d' ' -f1)")

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
surveyd_ticks() { local p t=0; for p in "${SERVER_PIDS[@]}"; do t=$((t + $(ticks "$p"))); done; echo $t; }
# Context switches of every surveyd thread (voluntary: it waited, for PostgreSQL's answer or for
# work; involuntary: it was preempted): what a round trip and a hand-over between threads cost.
surveyd_switches() {
    local p; for p in "${SERVER_PIDS[@]}"; do cat /proc/"$p"/task/*/status 2>/dev/null; done \
        | awk '/^(non)?voluntary_ctxt_switches/ {t += $2} END {print t + 0}'
}
# PostgreSQL: the postmaster, its live children, and the children it has reaped (cutime + cstime),
# so backends that exit during the measurement still count.
pg_ticks() {
    local t
    t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$POSTMASTER/stat")
    for p in $(pgrep -P "$POSTMASTER"); do t=$((t + $(ticks "$p"))); done
    echo "$t"
}
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }  # not idle, iowait or steal
# Time the hypervisor ran something else while this VM wanted its cores: a measurement it falls
# in runs slower everywhere (surveyd's, PostgreSQL's and the load's CPU a request all rise).
steal_ticks() { awk '/^cpu / {print $9}' /proc/stat; }
# Between measurements only our PostgreSQL idles: wait (at most QUIET_WAIT s, 30) until everything
# else uses under 20 % of one core over 2 s (at rest this VM's kernel threads take ~10 %), so
# another build or test on the same cores does not fall into a measurement.
wait_quiet() {
    local waited=0 b0 b1 p0 p1
    while :; do
        b0=$(busy_ticks); p0=$(pg_ticks); sleep 2; b1=$(busy_ticks); p1=$(pg_ticks)
        [ $(( (b1 - b0) - (p1 - p0) )) -lt $((HZ * 2 / 5)) ] && return 0
        [ "$waited" -ge "${QUIET_WAIT:-30}" ] && { log "the machine is busy ($(( (b1 - b0) - (p1 - p0) )) ticks in 2 s); measuring anyway"; return 0; }
        waited=$((waited + 2))
    done
}
child_s() { tail -1 "$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.2f", t }'; }

# snapshot / account: CPU over the measured seconds (called in this shell, not in $(...): `times`
# must see the load generators this shell has waited for).
snapshot() { S0=$(surveyd_ticks); P0=$(pg_ticks); B0=$(busy_ticks); T0=$(steal_ticks); times > "$WORK/.times"; K0=$(child_s "$WORK/.times"); }
account() {  # count -> sets US_SD US_PG US_GEN OTHER (µs per request; CPU-s of everyone else), STEAL (s)
    local s1 p1 b1 k1; s1=$(surveyd_ticks); p1=$(pg_ticks); b1=$(busy_ticks); times > "$WORK/.times"; k1=$(child_s "$WORK/.times")
    STEAL=$(awk -v a="$T0" -v b="$(steal_ticks)" -v h="$HZ" 'BEGIN {printf "%.2f", (b - a) / h}')
    read -r US_SD US_PG US_GEN OTHER <<< "$(awk -v n="$1" -v h="$HZ" -v s=$((s1 - S0)) -v p=$((p1 - P0)) -v b=$((b1 - B0)) -v k="$(awk -v a="$K0" -v b="$k1" 'BEGIN {print b - a}')" \
        'BEGIN { o = b / h - s / h - p / h - k; if (o < 0) o = 0; if (n < 1) n = 1;
                 printf "%.0f %.0f %.0f %.2f\n", s / h * 1e6 / n, p / h * 1e6 / n, k * 1e6 / n, o }')"
}

run_wrk() {  # mode secs: wrk against the running servers, one per port; sets RATE (2xx/s summed) STATUSES
    local mode=$1 secs=$2 i n=${#SERVER_PIDS[@]} conns pids=()
    for i in $(seq 0 $((n - 1))); do
        if [ "$n" = 1 ]; then conns="-t2 -c$CONNECTIONS"; else conns="-t1 -c$(( CONNECTIONS / n + (i < CONNECTIONS % n ? 1 : 0) ))"; fi
        # shellcheck disable=SC2086
        PHASE="$mode$i" RUN_TAG="pg$(date +%s%N)p$i" wrk $conns -d"${secs}s" --timeout 10s -s "$HERE/wrk/submit.lua" \
            "http://127.0.0.1:${PORTS[$i]}" > "$WORK/out/wrk-$i.txt" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || true; done
    RATE=0; STATUSES=
    for i in $(seq 0 $((n - 1))); do
        local line; line=$(grep '^RESULT' "$WORK/out/wrk-$i.txt") || { cat "$WORK/out/wrk-$i.txt" >&2; die "wrk printed no RESULT"; }
        RATE=$(awk -v a="$RATE" -v b="$(echo "$line" | sed 's/.* ok_rps=\([0-9.]*\).*/\1/')" 'BEGIN {printf "%.1f", a + b}')
        STATUSES="$STATUSES${STATUSES:+/}$(echo "$line" | sed 's/.* statuses=\([^ ]*\).*/\1/')"
        REQS=$(( ${REQS:-0} + $(echo "$line" | sed 's/.* requests=\([0-9]*\).*/\1/') ))
    done
}
measure_surveyd() {  # mode processes
    start_servers "$2"
    run_wrk "${1}warm" "$WARM" > /dev/null
    snapshot; REQS=0; local w0; w0=$(surveyd_switches)
    local profiler=
    if [ "${PERF:-0}" = 1 ] && [ "$2" = 1 ]; then
        perf record -F "${PERF_FREQ:-499}" --call-graph "${PERF_CALL_GRAPH:-dwarf,16384}" -p "${SERVER_PIDS[0]}" \
            -o "$WORK/perf-$1-r${ROUND:-0}.data" -- sleep "$SECS" 2> /dev/null &
        profiler=$!
    fi
    run_wrk "$1" "$SECS"
    if [ -n "$profiler" ]; then wait "$profiler" || true; fi
    account "$REQS"
    local switches; switches=$(awk -v a="$w0" -v b="$(surveyd_switches)" -v n="$REQS" 'BEGIN { printf "%.2f", (n > 0 ? (b - a) / n : 0) }')
    stop_servers
    LINE="$1 rate=$RATE requests=$REQS statuses=$STATUSES surveyd_us=$US_SD postgres_us=$US_PG load_us=$US_GEN other_cpu_s=$OTHER steal_s=$STEAL switches=$switches"
}
run_pgbench() {  # script secs -> output file $WORK/out/pgbench.txt
    "$PGBIN/pgbench" "${PG[@]}" -n -M prepared -c "$PGBENCH_CLIENTS" -j 2 -T "$2" -f "$HERE/pg/$1" "${PGBENCH_VARS[@]}" \
        -D "base=$(( $(date +%s) * 100000000 ))" -D "now=$(date +%s%3N)" -D n=0 postgres > "$WORK/out/pgbench.txt" 2>&1 \
        || { cat "$WORK/out/pgbench.txt" >&2; die "pgbench $1"; }
}
measure_pgbench() {  # mode script
    # pgbench's 64 backends exit together when it ends: let the postmaster reap them before
    # reading CPU, or a backend's seconds would fall between its own stat and the postmaster's.
    run_pgbench "$2" "$WARM"; sleep 1
    snapshot
    run_pgbench "$2" "$SECS"; sleep 1
    local n failed
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/out/pgbench.txt")
    failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/out/pgbench.txt")
    account "$n"
    RATE=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORK/out/pgbench.txt" | xargs printf '%.1f')
    LINE="$1 rate=$RATE requests=$n failed=${failed:-0} latency_ms=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$WORK/out/pgbench.txt") surveyd_us=0 postgres_us=$US_PG load_us=$US_GEN other_cpu_s=$OTHER steal_s=$STEAL"
}

# A database in service has planner statistics; a fresh one has none until autovacuum's first
# ANALYZE (up to a minute in), and the hot statements' plans must be right without them (the
# replay check's once scanned the organization's rows and slowed as the table grew). So the first
# PRIME s (10) of submissions, through the seeding process on the freshly migrated database, are
# measured as "fresh" and set against the steady one-process rate; then the statistics a
# database in service has (the rounds' first VACUUM (ANALYZE), or ANALYZE=1 with VACUUMS=0), and
# the rounds.
wait_quiet
log "fresh: the first ${PRIME:-10} s of submissions on the freshly migrated database"
snapshot; REQS=0
run_wrk fresh "${PRIME:-10}"
account "$REQS"
FRESH_RATE=$RATE
stop_servers
[ "${ANALYZE:-1}" = 1 ] && [ "${VACUUMS:-1}" != 1 ] && psql_c "ANALYZE"
rec "FRESH rate=$RATE requests=$REQS statuses=$STATUSES surveyd_us=$US_SD postgres_us=$US_PG load_us=$US_GEN other_cpu_s=$OTHER steal_s=$STEAL responses=$(psql_c 'SELECT count(*) FROM responses')"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
OTHER_MAX=${OTHER_MAX:-$(awk -v s="$SECS" 'BEGIN {print s / 4}')}; ATTEMPTS=${ATTEMPTS:-2}
MODES=(one three pgbench); [ "$WRITE" = 1 ] && MODES+=(write); [ "$SERIAL" = 1 ] && MODES+=(serial)
declare -A SUM
for m in "${MODES[@]}"; do SUM[$m]=0; done
log "$ROUNDS rounds of ${MODES[*]}: ${WARM} s warm-up + ${SECS} s measured each"
for r in $(seq 1 "$ROUNDS"); do
    shift_=$(( (r - 1) % ${#MODES[@]} )); order=("${MODES[@]:$shift_}" "${MODES[@]:0:$shift_}")
    declare -A R=()
    ROUND=$r
    for m in "${order[@]}"; do
        for attempt in $(seq 1 "$ATTEMPTS"); do
            VACUUM_S=-
            if [ "${VACUUMS:-1}" = 1 ]; then
                v0=$(date +%s%N); psql_c "VACUUM (ANALYZE)"; VACUUM_S=$(awk -v a="$v0" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
            fi
            [ "${CHECKPOINTS:-1}" = 1 ] && psql_c CHECKPOINT
            wait_quiet
            case $m in
                one) measure_surveyd one 1 ;;
                three) measure_surveyd three 3 ;;
                pgbench) measure_pgbench pgbench submit.sql ;;
                write) measure_pgbench write write.sql ;;
                serial) measure_pgbench serial write-serial.sql ;;
            esac
            awk -v o="$OTHER" -v m="$OTHER_MAX" 'BEGIN { exit !(o > m) }' || break
            if [ "$attempt" -lt "$ATTEMPTS" ]; then
                rec "DISCARDED round=$r mode=$LINE"; log "round $r $LINE — other processes used $OTHER CPU-s: measuring again"
            else
                LINE="$LINE*"
            fi
        done
        rec "RESULT round=$r mode=$LINE vacuum_before_s=$VACUUM_S"
        log "round $r $LINE"
        R[$m]=$RATE; SUM[$m]=$(awk -v a="${SUM[$m]}" -v b="$RATE" 'BEGIN {printf "%.1f", a + b}')
    done
    line="round $r (${order[*]}): surveyd x1 ${R[one]}/s   x3 ${R[three]}/s   pgbench ${R[pgbench]} tps"
    [ "$WRITE" = 1 ] && line="$line   write alone ${R[write]} tps"
    [ "$SERIAL" = 1 ] && line="$line   serial ${R[serial]} tps"
    echo "$line   x1/pgbench $(ratio "${R[one]}" "${R[pgbench]}")   x3/pgbench $(ratio "${R[three]}" "${R[pgbench]}")   x3/x1 $(ratio "${R[three]}" "${R[one]}")" | tee -a "$RESULTS"
done
mean() { awk -v s="$1" -v n="$ROUNDS" 'BEGIN {printf "%.0f", s / n}'; }
{
    echo
    echo "== surveyd on PostgreSQL vs pgbench, one cluster, the same minutes ($(date -u +%FT%TZ)), $CORES cores${LOW:+ (PostgreSQL on $HIGH, the rest on $LOW)}, $CONNECTIONS connections (pgbench $PGBENCH_CLIENTS clients), $ROUNDS rounds x ${SECS} s"
    line="mean: surveyd x1 $(mean "${SUM[one]}")/s   x3 $(mean "${SUM[three]}")/s   pgbench (the submission's transaction) $(mean "${SUM[pgbench]}") tps"
    [ "$WRITE" = 1 ] && line="$line   pgbench (its writes alone) $(mean "${SUM[write]}") tps"
    [ "$SERIAL" = 1 ] && line="$line   pgbench (its writes alone, serial) $(mean "${SUM[serial]}") tps"
    echo "$line"
    R1=$(ratio "${SUM[one]}" "${SUM[pgbench]}")
    line="ratios (sums over rounds): x1/pgbench $R1   x3/pgbench $(ratio "${SUM[three]}" "${SUM[pgbench]}")"
    [ "$WRITE" = 1 ] && line="$line   x1/write-alone $(ratio "${SUM[one]}" "${SUM[write]}")"
    [ "$SERIAL" = 1 ] && line="$line   x1/serial $(ratio "${SUM[one]}" "${SUM[serial]}")"
    echo "$line   [target x1/pgbench >= 0.8: $(awk -v r="$R1" 'BEGIN {print (r >= 0.8) ? "met" : "MISSED"}')]"
    R31=$(ratio "${SUM[three]}" "${SUM[one]}")
    RF=$(ratio "$FRESH_RATE" "$(mean "${SUM[one]}")")
    echo "x3/x1 $R31 [target >= 0.9: $(awk -v r="$R31" 'BEGIN {print (r >= 0.9) ? "met" : "MISSED"}')]   fresh (first ${PRIME:-10} s of a freshly migrated database) $FRESH_RATE/s, fresh/x1 $RF [target >= 0.8: $(awk -v r="$RF" 'BEGIN {print (r >= 0.8) ? "met" : "MISSED"}')]"
    echo "CPU per request, µs, mean of rounds (load = wrk or pgbench; other = CPU-s of other processes per measurement):"
    awk '/^RESULT/ { split("", v); for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     m = v["mode"]; n[m]++; sd[m] += v["surveyd_us"]; pg[m] += v["postgres_us"]; ld[m] += v["load_us"]; ot[m] += v["other_cpu_s"] + 0
                     sw[m] += v["switches"] + 0 }
         END { split("one three pgbench write serial", order, " ")
               for (j = 1; j <= 5; j++) { m = order[j]; if (n[m]) printf "  %-8s surveyd %5.0f   postgres %5.0f   load %4.0f   total %5.0f   other %.2f s%s\n",
                   m, sd[m] / n[m], pg[m] / n[m], ld[m] / n[m], (sd[m] + pg[m] + ld[m]) / n[m], ot[m] / n[m],
                   (sw[m] > 0 ? sprintf("   surveyd context switches %.2f", sw[m] / n[m]) : "") } }' "$RESULTS"
    echo "rows: responses $(psql_c 'SELECT count(*) FROM responses'), audit $(psql_c 'SELECT count(*) FROM audit'); raw lines: $RESULTS"
} | tee -a "$RESULTS"
