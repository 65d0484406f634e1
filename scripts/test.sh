#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, build, unit and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
swift test --skip-build
