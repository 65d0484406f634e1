#!/usr/bin/env bash
# Submissions with webhooks beside them, measured alternately in the same minutes:
#   none  — no webhook (the baseline)
#   hang  — one webhook whose receiver accepts the connection and never answers (every attempt
#           waits out the 15 s timeout; the outbox grows behind it)
#   fast  — one webhook whose receiver answers 200 at once (every event recorded and delivered)
#
#   Benchmarks/webhooks.sh [BIN] [ROUNDS]
#
# Uses the data dir and tokens a previous Benchmarks/run.sh left in $BENCH_DIR (QUICK=1 is
# enough). Each round runs the three modes on the same data dir: start the server, create the
# webhook (hang, fast), warm up 3 s, measure $SECS s (8) of wrk submissions at 64 connections,
# delete the webhook (its undelivered deliveries go with it), stop. Prints accepted/s and server
# CPU µs per request per mode, and the ratios hang/none and fast/none over all rounds. The modes'
# order turns from round to round: use a multiple of 3 rounds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
BIN=${1:-/tmp/bench-build/release/surveyd}; ROUNDS=${2:-3}; SECS=${SECS:-8}
PORT=${PORT:-18080}; BASE="http://127.0.0.1:$PORT"; HOOK_PORT=${HOOK_PORT:-18090}
# shellcheck disable=SC1091
source "$WORK/env.sh"
export LUA_PATH="$HERE/wrk/?.lua;;" FIXTURES="$HERE/fixtures" OUT_DIR="$WORK/ids-webhooks" THREADS=2 PHASE=submit TOKEN="$COLLECTOR"
mkdir -p "$OUT_DIR"; : > "$WORK/webhooks-server.log"

# The receivers: one Python process, two paths' behaviour chosen by port offset.
python3 - "$HOOK_PORT" > "$WORK/webhooks-receiver.log" 2>&1 <<'PY' &
import http.server, socketserver, sys, threading, time
port = int(sys.argv[1])
class Fast(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
class Hang(socketserver.BaseRequestHandler):
    def handle(self):
        time.sleep(3600)
class Threaded(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True; allow_reuse_address = True
fast = http.server.ThreadingHTTPServer(("127.0.0.1", port), Fast)
hang = Threaded(("127.0.0.1", port + 1), Hang)
threading.Thread(target=hang.serve_forever, daemon=True).start()
fast.serve_forever()
PY
RECEIVER=$!
trap 'kill $RECEIVER 2>/dev/null || true' EXIT
sleep 0.5

one() {  # mode -> "rate us_per_req"
    "$BIN" serve --data-dir "$WORK/data" --port "$PORT" --startup-check quick --no-log --webhooks-allow-private >> "$WORK/webhooks-server.log" 2>&1 &
    local pid=$! waited=0
    until curl -sf "$BASE/healthz" > /dev/null 2>&1; do
        kill -0 $pid 2>/dev/null || { echo "webhooks: $BIN exited at start-up (see $WORK/webhooks-server.log)" >&2; exit 1; }
        [ $waited -lt 6000 ] || { kill -9 $pid; echo "webhooks: not healthy after 300 s" >&2; exit 1; }
        sleep 0.05; waited=$((waited + 1))
    done
    local hook=""
    case $1 in
        hang) hook=$((HOOK_PORT + 1)) ;;
        fast) hook=$HOOK_PORT ;;
    esac
    local wid=""
    if [ -n "$hook" ]; then
        wid=$(curl -sf -X POST "$BASE/v1/orgs/$ORG/webhooks" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
            -d "{\"url\":\"http://127.0.0.1:$hook/hook\",\"events\":[\"response.accepted\"]}" | sed 's/.*"webhookId":"\([^"]*\)".*/\1/')
    fi
    RUN_TAG="wh$1$(date +%s%N)" wrk -t2 -c64 -d3s -s "$HERE/wrk/submit.lua" "$BASE" > /dev/null 2>&1
    local c0; c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
    local line; line=$(RUN_TAG="wh$1$(date +%s%N)" wrk -t2 -c64 -d"${SECS}s" -s "$HERE/wrk/submit.lua" "$BASE" 2>&1 | grep '^RESULT')
    local c1; c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
    if [ -n "$wid" ]; then
        curl -sf -X DELETE "$BASE/v1/orgs/$ORG/webhooks/$wid" -H "Authorization: Bearer $ADMIN" > /dev/null
    fi
    kill -TERM $pid; wait $pid || true
    local n rate; n=$(echo "$line" | sed 's/.* requests=\([0-9]*\).*/\1/'); rate=$(echo "$line" | sed 's/.* rps=\([0-9.]*\).*/\1/')
    awk -v r="$rate" -v t=$((c1 - c0)) -v h="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {printf "%.0f %.0f\n", r, t / h * 1e6 / n}'
}

tn=0; th=0; tf=0
for r in $(seq 1 "$ROUNDS"); do
    # The order turns each round: the data dir grows and the machine warms, and neither should
    # favour one mode.
    order=(none hang fast); shift=$(( (r - 1) % 3 )); order=("${order[@]:$shift}" "${order[@]:0:$shift}")
    for mode in "${order[@]}"; do
        read -r rate us <<< "$(one "$mode")"
        case $mode in none) rn=$rate pn=$us ;; hang) rh=$rate ph=$us ;; fast) rf=$rate pf=$us ;; esac
    done
    echo "round $r (${order[*]}): none $rn/s ${pn}us   hang $rh/s ${ph}us   fast $rf/s ${pf}us"
    tn=$((tn + rn)); th=$((th + rh)); tf=$((tf + rf))
done
echo "mean: none $((tn / ROUNDS))/s   hang $((th / ROUNDS))/s   fast $((tf / ROUNDS))/s   hang/none $(awk -v a=$tn -v b=$th 'BEGIN {printf "%.3f", b / a}')   fast/none $(awk -v a=$tn -v b=$tf 'BEGIN {printf "%.3f", b / a}')"
