#!/usr/bin/env bash
# Instructions per operation of a submission's domain work (parse, validate, canonical, digest,
# sha256, scan; and the roster form of forms.sh against its flat twin: roster-validate,
# flat-validate, roster-parse, flat-parse), counted by callgrind: (count at N=2000 − count at N=0) / 2000. Unlike time, the
# count hardly moves with this machine's load, so a 5 % change in one piece is visible at once.
# SHA-256 is counted without SHA-NI (valgrind does not emulate it), so `digest` and `sha256`
# read high; compare them only with each other.
#
#   Benchmarks/micro.sh [OPERATION ...]     default: all six
#   A=/path/to/other/checkout Benchmarks/micro.sh    the same for that checkout's domain code, side by side
# Builds in $BENCH_DIR (default /tmp/surveyd-bench)/micro-this and micro-other.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
ops=("$@"); [ ${#ops[@]} -gt 0 ] || ops=(parse validate canonical digest sha256 scan)
export FIXTURES="$HERE/fixtures" FORMS="${BENCH_DIR:-/tmp/surveyd-bench}/micro-forms"
python3 "$HERE/fixtures/make_forms.py" "$FORMS" > /dev/null
# The package is built from a copy whose links point at the checkout measured.
build() {
    local dir="$2"
    mkdir -p "$dir/Sources"
    cp "$HERE/micro/Package.swift" "$dir/"
    rm -rf "$dir/Sources/micro"; cp -r "$HERE/micro/Sources/micro" "$dir/Sources/"
    for m in SurveyDomain SurveyForms SurveyExpressions; do
        # An older checkout has no module of that name: its code is then inside SurveyDomain.
        if [ -d "$1/Sources/$m" ]; then ln -sfn "$1/Sources/$m" "$dir/Sources/$m"; else mkdir -p "$dir/Sources/$m" && echo "// empty" > "$dir/Sources/$m/Empty.swift"; fi
    done
    ln -sfn "$1/Sources/CCrypto" "$dir/Sources/CCrypto"
    swift build -c release --package-path "$dir" > /dev/null && echo "$dir/.build/release/micro"
}
count() { N=$3 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
per_op() { local a b; a=$(count "$1" "$2" 0); b=$(count "$1" "$2" 2000); echo $(((b - a) / 2000)); }
WORK=${BENCH_DIR:-/tmp/surveyd-bench}
B=$(build "$(cd "$HERE/.." && pwd)" "$WORK/micro-this")
[ -z "${A:-}" ] || A=$(build "$(cd "$A" && pwd)" "$WORK/micro-other")
printf '%-10s %12s %12s\n' operation "${A:+other}" "this"
for op in "${ops[@]}"; do
    printf '%-10s %12s %12s\n' "$op" "${A:+$(per_op "$A" "$op")}" "$(per_op "$B" "$op")"
done
