#!/usr/bin/env bash
# Browser tests of the web console (/console/) in a real headless Chromium, via Selenium.
#
# Usage (from anywhere; needs the already built server, it never builds):
#   scripts/browser_tests.sh                  # run Tests/Browser/test_console.py (the review desk, about 30 s),
#                                             # Tests/Browser/test_console_admin.py (admin and operator pages, about 45 s)
#                                             # Tests/Browser/test_console_forms.py (forms with groups, repeats and
#                                             # languages, about 15 s) and Tests/Browser/test_console_form_files.py
#                                             # (pyxform's warnings, a version's files for download, about 10 s)
#                                             # and Tests/Browser/test_console_collect.py (the ODK Collect QR
#                                             # code read off the screen with zbarimg, about 5 s)
#                                             # and Tests/Browser/test_console_data.py (the Data, Summary and
#                                             # Map views, with JavaScript on and off, about 20 s)
#                                             # and Tests/Browser/test_console_entities.py (entity lists:
#                                             # search, an entity's history, resolve, about 10 s)
#   scripts/browser_tests.sh -k bulk          # only the tests (of any file) whose name contains "bulk"
#   scripts/browser_tests.sh --screenshots    # regenerate every Docs/console/*.png instead
#
# Environment: SURVEYD_BIN (default .build/debug/surveyd, relative to the repository) is the
# server binary; CHROME_BIN and CHROMEDRIVER override where Chromium and its driver are.
#
# On a fresh Debian 12 machine it first installs what is missing: the Debian packages chromium
# and chromium-driver (only when `chromium` / `chromedriver` are not on PATH), python3-venv when
# python3 cannot make a venv, and a venv at .build/venv-browser with Selenium pinned below.
# Exits non-zero when anything fails; the test run's last line is "N passed, N failed" over all
# seven files (test_console_admin.py's known-bug tests, reported as XFAIL, count as neither).
set -euo pipefail
cd "$(dirname "$0")/.."

SELENIUM_VERSION=4.51.0
# Selenium's own dependencies, pinned to the set this was verified with (Python 3.11).
PINNED=(
  "selenium==$SELENIUM_VERSION" attrs==26.1.0 certifi==2026.10.19.post1 h11==0.16.0 idna==3.20
  outcome==1.3.0.post0 PySocks==1.7.1 sniffio==1.3.1 sortedcontainers==2.4.0 trio==0.35.0
  trio-websocket==0.12.2 typing_extensions==4.16.0 urllib3==2.8.0 websocket-client==1.9.2 wsproto==1.3.2
)
VENV=.build/venv-browser

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  echo "browser_tests: installing $*" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  apt_install chromium chromium-driver
fi

# zbarimg reads the console's QR codes off screenshots, as a phone's camera would.
if ! command -v zbarimg >/dev/null; then
  apt_install zbar-tools
fi

if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt_install python3 python3-venv
fi

if ! "$VENV/bin/python" -c "import selenium, sys; sys.exit(selenium.__version__ != '$SELENIUM_VERSION')" >/dev/null 2>&1; then
  echo "browser_tests: making $VENV with selenium==$SELENIUM_VERSION" >&2
  rm -rf "$VENV"
  mkdir -p .build
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PINNED[@]}"
fi

bin="${SURVEYD_BIN:-.build/debug/surveyd}"
[ -x "$bin" ] || { echo "browser_tests: $bin is missing: build surveyd first (swift build)" >&2; exit 1; }

# Selenium must never try to fetch a browser or driver of its own: the Debian ones are used.
export SE_OFFLINE=true

if [ "${1:-}" = "--screenshots" ]; then
  shift
  exec "$VENV/bin/python" scripts/console_screenshots.py "$@"
fi

# The test files, one after the other; -k WORD goes to the files that have a test of that name.
word=""
if [ "${1:-}" = "-k" ]; then
  [ -n "${2:-}" ] || { echo "browser_tests: -k needs a word" >&2; exit 2; }
  word="$2"
fi
status=0 passed=0 failed=0 ran=0
for file in Tests/Browser/test_console.py Tests/Browser/test_console_admin.py Tests/Browser/test_console_forms.py \
            Tests/Browser/test_console_form_files.py Tests/Browser/test_console_collect.py Tests/Browser/test_console_data.py \
            Tests/Browser/test_console_entities.py; do
  if [ -n "$word" ] && ! grep -o '^def test_[A-Za-z0-9_]*' "$file" | grep -qF -- "$word"; then
    continue
  fi
  ran=$((ran + 1))
  log=$(mktemp)
  set +e
  "$VENV/bin/python" "$file" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || status=1
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
  rm -f "$log"
  if [ -z "$summary" ]; then  # it did not get as far as its summary
    echo "browser_tests: $file ended with status $rc before its summary" >&2
    failed=$((failed + 1)); status=1
    continue
  fi
  p=${summary%% passed*}; f=${summary#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
done
if [ "$ran" -eq 0 ]; then
  echo "browser_tests: no test's name contains \"$word\"" >&2
  exit 1
fi
echo "$passed passed, $failed failed"
exit "$status"
