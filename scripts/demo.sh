#!/usr/bin/env bash
# Builds surveyd and starts the demo: an organization, three users and a published survey on a
# fresh data dir (./demo-data), printing tokens and a curl line to try. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build --product surveyd
rm -rf ./demo-data
exec .build/debug/surveyd serve --demo --data-dir ./demo-data --port "${SURVEYD_PORT:-8080}"
