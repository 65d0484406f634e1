# Sourced by the benchmarks that keep their work in a throwaway dir of their own and build
# surveyd when they are not given a binary (console.sh, pgfile.sh, postgres.sh, odata.sh,
# dataviews.sh, map.sh). The caller sets
# ROOT (the checkout), WORK (from BENCH_DIR) and BIN (its first argument, possibly empty).
#
#   log TEXT             a timestamped line on stderr
#   die TEXT             that line as a failure, then exit 1
#   fresh_bench_dir NAME WORK emptied and marked as NAME's (WORK/.NAME-bench), with an empty
#                        RESULTS file (WORK/results.txt). Refused: /, /tmp, $HOME, the checkout or
#                        a dir inside it, and a dir that is neither empty nor NAME's from an
#                        earlier run (nothing else is ever deleted)
#   rec TEXT             a line printed and appended to RESULTS
#   stop_server_and_cluster PATH...
#                        the EXIT trap of a run with one server and a cluster in WORK/pg: kills
#                        SERVER_PID (if set), stops and removes the cluster, removes PATHs
#   release_bin          BIN as given, or a release build made here (--scratch-path $SCRATCH,
#                        default /tmp/bench-build; its log in WORK/build.log) when BIN is empty

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

fresh_bench_dir() {
    local name=$1
    case "$WORK" in
        /|/tmp|/tmp/|"$HOME"|"$ROOT"|"$ROOT"/*) die "BENCH_DIR=$WORK would delete something that is not a benchmark dir" ;;
    esac
    [ ! -e "$WORK" ] || [ -f "$WORK/.$name-bench" ] || [ -z "$(ls -A "$WORK")" ] \
        || die "BENCH_DIR=$WORK exists and is not a previous $name.sh dir; not deleting it"
    rm -rf "$WORK"
    mkdir -p "$WORK"
    touch "$WORK/.$name-bench"
    RESULTS="$WORK/results.txt"
    : > "$RESULTS"
}

rec() { echo "$*" | tee -a "$RESULTS"; }

stop_server_and_cluster() {
    [ -n "${SERVER_PID:-}" ] && kill -9 "$SERVER_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    "$ROOT/scripts/pg_cluster.sh" stop "$WORK/pg" 2>/dev/null || true
    rm -rf "$WORK/pg" "$@"
}

release_bin() {
    if [ -z "$BIN" ]; then
        log "building release (scratch ${SCRATCH:-/tmp/bench-build})"
        swift build -c release --package-path "$ROOT" --scratch-path "${SCRATCH:-/tmp/bench-build}" --product surveyd > "$WORK/build.log" 2>&1 \
            || { tail -30 "$WORK/build.log"; die "release build"; }
        BIN="${SCRATCH:-/tmp/bench-build}/release/surveyd"
    fi
    [ -x "$BIN" ] || die "no binary $BIN"
}
