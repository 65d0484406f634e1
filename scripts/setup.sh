#!/usr/bin/env bash
# Installs what surveyd needs on a fresh Debian 12 machine that has the Swift toolchain
# (at /opt/swift or on PATH): the C libraries it links against, and the tools the tests use.
set -euo pipefail
export PATH="/opt/swift/usr/bin:$PATH"

packages=(libsqlite3-dev libmicrohttpd-dev libssl-dev libxlsxwriter-dev libarchive-dev libargon2-dev libqrencode-dev libcurl4-openssl-dev libxml2-dev libpq-dev postgresql-15 pkg-config curl sqlite3 openssl)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: swift is not on PATH (expected /opt/swift/usr/bin)" >&2; exit 1; }
