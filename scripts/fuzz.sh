#!/usr/bin/env bash
# Builds every libFuzzer harness in Fuzz/ with swiftc (not SwiftPM: the package's .build is
# shared) and runs each for the given seconds, seeded from Fuzz/corpus/<harness>/.
#   scripts/fuzz.sh [seconds-per-harness] [harness ...]      (default 60 s, every harness)
# FUZZ_RUNS=N runs N inputs per harness instead of a time; FUZZ_SKIP="A B" leaves harnesses out;
# FUZZ_MAX_LEN=N caps an input's bytes (4096 by default).
# Inputs found on the way go to a temporary directory, never into the repository; a crashing
# input is kept in .build/fuzz/crashes/<harness>/ and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
# The Swift backtracer hangs on the crash path of a libFuzzer process; libFuzzer reports instead.
export SWIFT_BACKTRACE=enable=no

seconds="${1:-60}"
shift || true
if [ $# -gt 0 ]; then
  harnesses=("$@")
else
  harnesses=()
  for f in Fuzz/*.swift; do harnesses+=("$(basename "$f" .swift)"); done
fi

out=.build/fuzz
flags=(-parse-as-library -swift-version 6 -O -sanitize=fuzzer,address -use-ld=lld)
mkdir -p "$out/modules" "$out/bin" "$out/logs" "$out/extracted"

# SurveyDomain (with SurveyForms, which reads form logic with SurveyExpressions): modules every harness links.
echo "fuzz: building SurveyExpressions, SurveyForms and SurveyDomain with coverage"
swiftc "${flags[@]}" -enable-testing -module-name SurveyExpressions -emit-module \
  -emit-module-path "$out/modules/SurveyExpressions.swiftmodule" -wmo -c \
  Sources/SurveyExpressions/*.swift -o "$out/SurveyExpressions.o"
swiftc "${flags[@]}" -enable-testing -module-name SurveyForms -emit-module \
  -emit-module-path "$out/modules/SurveyForms.swiftmodule" -wmo -c -I "$out/modules" \
  Sources/SurveyForms/*.swift -o "$out/SurveyForms.o"
swiftc "${flags[@]}" -enable-testing -module-name SurveyDomain -emit-module \
  -emit-module-path "$out/modules/SurveyDomain.swiftmodule" -wmo -c -I Sources/CCrypto -I "$out/modules" \
  Sources/SurveyDomain/*.swift -o "$out/SurveyDomain.o"

# A harness names the files it compiles in (`// fuzz-sources: <file> ...`) and the types it
# copies out of files from modules that do not build alone (`// fuzz-extract: <file> <type>`).
build() {
  local h="$1" src="Fuzz/$1.swift" extra=() line file type name files mods=()
  while read -r line; do extra+=($line); done < <(sed -n 's|^// fuzz-sources: ||p' "$src")
  # `// fuzz-module: <Module> <files>`: a few files of a heavy module, compiled as a module of
  # that name for this harness alone, so sources that import it compile in unchanged.
  while read -r name files; do
    mkdir -p "$out/modules/$h"
    swiftc "${flags[@]}" -suppress-warnings -module-name "$name" -emit-module -emit-module-path "$out/modules/$h/$name.swiftmodule" \
      -wmo -c -I "$out/modules" -I Sources/CCrypto $files -o "$out/$h-$name.o"
    extra+=("$out/$h-$name.o"); mods=(-I "$out/modules/$h")
  done < <(sed -n 's|^// fuzz-module: ||p' "$src")
  while read -r file type; do
    awk -v t="$type" '$0 ~ "^public (enum|struct) " t "[ {]" {p=1} p {print} p && /^}/ {exit}' "$file" > "$out/extracted/$type.swift"
    [ -s "$out/extracted/$type.swift" ] || { echo "fuzz: $type not found in $file" >&2; return 1; }
    extra+=("$out/extracted/$type.swift")
  done < <(sed -n 's|^// fuzz-extract: ||p' "$src")
  # Warnings of the compiled-in sources are the package build's to show.
  # libmicrohttpd only for the HTTP engine's files a harness compiles in (the form decoder's),
  # libxml2 for SurveyXForm's.
  swiftc "${flags[@]}" -suppress-warnings -module-name "Fuzz$h" -I "$out/modules" "${mods[@]}" -I Sources/CCrypto -I Sources/CMicroHTTPD \
    -I Sources/CLibXML2 -Xcc -I/usr/include/libxml2 \
    "$src" "${extra[@]}" "$out/SurveyDomain.o" "$out/SurveyForms.o" "$out/SurveyExpressions.o" -lcrypto -lmicrohttpd -lxml2 -o "$out/bin/$h"
}

skip=" ${FUZZ_SKIP:-} "
status=0
for h in "${harnesses[@]}"; do
  [[ "$skip" == *" $h "* ]] && { echo "$h: skipped"; continue; }
  echo "fuzz: building $h"
  build "$h"
  work="$(mktemp -d /tmp/surveyd-fuzz.XXXXXX)"
  crashes="$out/crashes/$h"
  mkdir -p "$crashes" "Fuzz/corpus/$h"
  if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$seconds"); fi
  rc=0
  "$out/bin/$h" "${limit[@]}" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-4096}" \
    -artifact_prefix="$crashes/" "$work" "Fuzz/corpus/$h" > "$out/logs/$h.log" 2>&1 || rc=$?
  rm -rf "$work"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$h.log" | tail -1)"
  if [ "$rc" -eq 0 ]; then
    echo "$h: ${runs:-?} executions, 0 crashes"
  else
    status=1
    echo "$h: ${runs:-?} executions, 1 crash (exit $rc)"
    grep -E "Fatal error|ERROR: libFuzzer|ERROR: AddressSanitizer|Test unit written to" "$out/logs/$h.log" | head -5 | sed 's/^/  /'
    echo "  log: $out/logs/$h.log"
  fi
done
exit "$status"
