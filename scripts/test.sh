#!/usr/bin/env bash
# The whole test suite on a fresh machine:
#   1. install what is missing (Debian packages), build everything;
#   2. unit and end-to-end tests (Swift Testing) against real servers on loopback, recording
#      every answer they see; then the end-to-end suite again on PostgreSQL 15 (a throwaway
#      cluster on a Unix socket, a database of its own for every test server);
#      every XForm a test is served is checked by ODK Validate (JavaRosa, as ODK Collect parses it);
#   2b. the OData feed read by clients no one here wrote (python-odata, odata-query; a few seconds),
#       and ODK Central's API driven by pyodk 1.3.0;
#   3. every recorded answer validated against Schemas/ (JSON Schema 2020-12);
#   4. conformance: schemathesis over every operation of Schemas/openapi.json on a seeded server;
#   5. every curl example in README.md and Docs/ run against a demo server;
#   6. the web console in a real headless Chromium (Selenium; installs chromium if missing);
#   7. the reliability harness, short form (chaos with kill -9, faults, abuse, tenancy), if present;
#   8. libFuzzer over every parser a request or a webhook receiver's answer reaches, 15 s each
#      (Fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
mkdir -p .build
rm -f .build/responses.jsonl .build/odk-validate-accepted.log
SURVEYD_RECORD_RESPONSES="$PWD/.build/responses.jsonl" swift test --skip-build
# Every XForm the tests were served went through ODK Validate (JavaRosa); say how many distinct ones.
echo "ODK Validate accepted $(cut -d' ' -f1 .build/odk-validate-accepted.log | sort -u | wc -l) distinct XForms"
# The OData feed read by python-odata and odata-query (a demo server of its own).
.build/venv-odata/bin/python Tests/OData/test_odata.py
# ODK Central's API driven by pyodk, ODK's own client (a demo server of its own).
.build/venv-central/bin/python Tests/Central/test_pyodk.py
PG_DIR="$(mktemp -d /tmp/surveyd-pg.XXXXXX)"
trap './scripts/pg_cluster.sh stop "$PG_DIR"' EXIT
SURVEYD_TEST_POSTGRES="$(PG_CLUSTER_OPTIONS="-c track_commit_timestamp=on" ./scripts/pg_cluster.sh start "$PG_DIR" 54329)" swift test --skip-build --filter EndToEndTests
./scripts/pg_cluster.sh stop "$PG_DIR"
trap - EXIT
export SURVEYD_BIN="$PWD/.build/debug/surveyd"
./scripts/conformance.sh
.build/venv/bin/python scripts/validate_recorded.py .build/responses.jsonl --require
python3 scripts/docs_examples.py
./scripts/browser_tests.sh
if [ -x Harness/run_all.sh ]; then
  Harness/run_all.sh
fi
./scripts/fuzz.sh 15
