# Sourced by the benchmarks that compare two kinds of request on one running server (forms.sh,
# openrosa.sh): the same minutes, the order turning from round to round.
#
#   measure LABEL SCRIPT   a 3 s warm-up, then $SECS s of wrk (2 threads, 64 connections) of
#                          Benchmarks/wrk/SCRIPT against $BASE; prints "rate us_per_request",
#                          the server's ($pid) CPU included; every answer must be $EXPECT (201);
#                          before each wrk run the caller's `before_wrk LABEL`, when it has one
#   alternate A B ROUNDS   ROUNDS rounds of `one A` and `one B` (the caller's function, printing
#                          what `measure` prints), A first in odd rounds; prints each round and
#                          the means, and sets MEAN_US_A and MEAN_US_B

measure() {
    if declare -F before_wrk > /dev/null; then before_wrk "$1"; fi
    RUN_TAG="w$1$(date +%s%N)" wrk -t2 -c64 -d3s -s "$HERE/wrk/$2" "$BASE" > /dev/null 2>&1
    if declare -F before_wrk > /dev/null; then before_wrk "$1"; fi
    local c0; c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
    local line; line=$(RUN_TAG="m$1$(date +%s%N)" wrk -t2 -c64 -d"${SECS}s" -s "$HERE/wrk/$2" "$BASE" 2>&1 | grep '^RESULT')
    local c1; c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
    local statuses; statuses=$(echo "$line" | sed 's/.* statuses=\([^ ]*\).*/\1/')
    case $statuses in "${EXPECT:-201}":*) ;; *) echo "$(basename "$0"): $1 answered $statuses, not all ${EXPECT:-201}" >&2; exit 1 ;; esac
    local n rate; n=$(echo "$line" | sed 's/.* requests=\([0-9]*\).*/\1/'); rate=$(echo "$line" | sed 's/.* ok_rps=\([0-9.]*\).*/\1/')
    awk -v r="$rate" -v t=$((c1 - c0)) -v h="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {printf "%.0f %.0f\n", r, t / h * 1e6 / n}'
}

alternate() {
    local a=$1 b=$2 rounds=$3 ta=0 tb=0 ua=0 ub=0 ra pa rb pb r
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then
            read -r ra pa <<< "$(one "$a")"; read -r rb pb <<< "$(one "$b")"
        else
            read -r rb pb <<< "$(one "$b")"; read -r ra pa <<< "$(one "$a")"
        fi
        echo "round $r: $a $ra/s ${pa}us   $b $rb/s ${pb}us"
        ta=$((ta + ra)); tb=$((tb + rb)); ua=$((ua + pa)); ub=$((ub + pb))
    done
    MEAN_US_A=$((ua / rounds)); MEAN_US_B=$((ub / rounds))
    echo "mean: $a $((ta / rounds))/s ${MEAN_US_A}us   $b $((tb / rounds))/s ${MEAN_US_B}us   $b/$a rate $(awk -v x=$ta -v y=$tb 'BEGIN {printf "%.3f", y / x}')"
}
