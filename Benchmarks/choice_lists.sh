#!/usr/bin/env bash
# The work a long choice list read from a CSV file costs (Docs/forms.md, "Files a form names"):
# reading a 50,000-row file into a definition, checking and encoding it as publishing does, and
# checking answers against it. SurveyExpressions and SurveyForms compiled with -O by swiftc (the
# package's .build is shared); the fastest of 5 rounds of each step.
#   Benchmarks/choice_lists.sh [ROWS]        default 50000
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
out="${BENCH_DIR:-/tmp/surveyd-bench}/choice-lists"
mkdir -p "$out"
swiftc -O -wmo -parse-as-library -module-name SurveyExpressions -emit-module -emit-module-path "$out/SurveyExpressions.swiftmodule" \
  -c Sources/SurveyExpressions/*.swift -o "$out/SurveyExpressions.o"
swiftc -O -wmo -parse-as-library -module-name SurveyForms -emit-module -emit-module-path "$out/SurveyForms.swiftmodule" -I "$out" \
  -c Sources/SurveyForms/*.swift -o "$out/SurveyForms.o"
swiftc -O -I "$out" Benchmarks/choice_lists/main.swift "$out/SurveyExpressions.o" "$out/SurveyForms.o" -o "$out/choice_lists"
"$out/choice_lists" "${1:-50000}"
