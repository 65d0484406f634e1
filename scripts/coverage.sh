#!/usr/bin/env bash
# Line and function coverage of the product's modules (Sources/Survey*) over three runs:
#   1. the Swift test suite (`swift test`) on the embedded SQLite engine;
#   2. the end-to-end tests again on PostgreSQL (a throwaway cluster, as scripts/test.sh does);
#   3. the browser tests (scripts/browser_tests.sh), so the console's pages count as served by a
#      real `surveyd` to a real Chromium.
# Counts come from every process: the test bundle, and each `surveyd` and `surveysync` child the
# tests start, including those killed with kill -9.
#
# Usage: scripts/coverage.sh          (run scripts/setup.sh once before, as for the tests)
# About 11 minutes on 2 cores: the build ~2 (seconds when .build/coverage is current), swift test
# ~1.5, the end-to-end tests on PostgreSQL 3.5 to 5, the browser tests ~2, merge and report seconds.
#
# Leaves in .build/coverage/ (a scratch path of its own: the ordinary .build/debug is untouched):
#   profiles/{swift,postgres,browser}/*.profraw   one file per process, per run
#   coverage.profdata, coverage.json               the merged counts, llvm-cov's per-file summary
#   report.txt                                     the table printed at the end
# The browser tests write Docs/console/user-collect-*.png again, as in scripts/test.sh.
# Exits 1 when a run had failing tests (the table is still printed: its figures then undercount).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
ROOT=$PWD
SCRATCH=.build/coverage
BIN="$ROOT/$SCRATCH/debug"
PROFILES="$ROOT/$SCRATCH/profiles"

# -runtime-counter-relocation is what LLVM's continuous mode (%c below) needs on Linux: counters
# live in the mmapped .profraw, so a process killed with kill -9 keeps what it ran.
FLAGS=(--scratch-path "$SCRATCH"
       -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping
       -Xswiftc -Xllvm -Xswiftc -runtime-counter-relocation)

swift build --build-tests "${FLAGS[@]}"

rm -rf "$PROFILES"
mkdir -p "$PROFILES"/{swift,postgres,browser}
# The tests start these instead of .build/debug's (Tests/*/Support/ServerProcess.swift,
# ChildProcess.swift; Tests/Browser/test_console.py).
export SURVEYD_BIN="$BIN/surveyd" SURVEYSYNC_BIN="$BIN/surveysync"
# %p: one file per process. %m: a pid the system hands out again later merges into its
# predecessor's file instead of truncating it.
profile() { echo "$PROFILES/$1/%c%p-%m.profraw"; }

failed=()
LLVM_PROFILE_FILE="$(profile swift)" swift test --skip-build "${FLAGS[@]}" || failed+=("swift test")

PG_DIR="$(mktemp -d /tmp/surveyd-coverage-pg.XXXXXX)"
trap './scripts/pg_cluster.sh stop "$PG_DIR"' EXIT
pg_url="$(PG_CLUSTER_OPTIONS="-c track_commit_timestamp=on" ./scripts/pg_cluster.sh start "$PG_DIR" 54339)"
SURVEYD_TEST_POSTGRES="$pg_url" LLVM_PROFILE_FILE="$(profile postgres)" \
  swift test --skip-build "${FLAGS[@]}" --filter EndToEndTests || failed+=("EndToEndTests on PostgreSQL")
./scripts/pg_cluster.sh stop "$PG_DIR"
trap - EXIT

LLVM_PROFILE_FILE="$(profile browser)" ./scripts/browser_tests.sh || failed+=("browser tests")

# A child started with an environment of its own (no LLVM_PROFILE_FILE) writes here, and its
# counts are missing from the figures.
if [ -e default.profraw ]; then
  echo "coverage: a process ran without LLVM_PROFILE_FILE (./default.profraw, removed): its counts are missing" >&2
  rm -f default.profraw
fi
for run in swift postgres browser; do
  echo "coverage: $run left $(find "$PROFILES/$run" -name '*.profraw' | wc -l) profiles"
done
find "$PROFILES" -name '*.profraw' > "$SCRATCH/profiles.txt"
llvm-profdata merge -sparse --input-files="$SCRATCH/profiles.txt" -o "$SCRATCH/coverage.profdata"

# The test bundle holds every module but the executables' own; the children add what they ran.
OBJECTS=("$BIN/surveydPackageTests.xctest" -object "$BIN/surveyd" -object "$BIN/surveysync")
llvm-cov export -summary-only -instr-profile="$SCRATCH/coverage.profdata" "${OBJECTS[@]}" > "$SCRATCH/coverage.json"
python3 scripts/coverage_table.py "$SCRATCH/coverage.json" "$ROOT/Sources" | tee "$SCRATCH/report.txt"
echo "coverage: line by line, e.g.:"
echo "  llvm-cov show -instr-profile=$SCRATCH/coverage.profdata ${OBJECTS[*]} Sources/SurveyConsole/Console.swift"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'coverage: failing tests in: %s\n' "${failed[@]}" >&2
  exit 1
fi
