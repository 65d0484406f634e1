#!/usr/bin/env bash
# Installs what surveyd needs on a fresh Debian 12 machine that has the Swift toolchain
# (at /opt/swift or on PATH): the C libraries it links against, and the tools the tests use.
set -euo pipefail
export PATH="/opt/swift/usr/bin:$PATH"

# openjdk-17-jdk-headless runs ODK Validate (JavaRosa, shipped in the pyxform wheel) in the tests,
# and compiles Tests/JavaRosa against it (javac): JavaRosa fills and judges instances the tests send.
# libjs-leaflet and libjs-leaflet.markercluster: the console's map (surveyd serves them from
# /usr/share/javascript/leaflet itself, so no page loads a script from another host).
packages=(libjs-leaflet libjs-leaflet.markercluster libsqlite3-dev libmicrohttpd-dev libssl-dev libxlsxwriter-dev libarchive-dev libargon2-dev libqrencode-dev libcurl4-openssl-dev libxml2-dev zlib1g-dev libpq-dev postgresql-15 pkg-config curl sqlite3 openssl openjdk-17-jdk-headless)
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

# pyxform, the XLSForm converter the server runs (`surveyd serve --pyxform`, by default the
# xls2xform of this venv), pinned with the dependencies it pins itself, in a venv inside the project.
PYXFORM_VERSION=4.5.0
FORMS_VENV="$(cd "$(dirname "$0")/.." && pwd)/.build/venv-forms"
if ! "$FORMS_VENV/bin/pip" show pyxform 2>/dev/null | grep -qx "Version: $PYXFORM_VERSION"; then
  echo "setup: installing pyxform $PYXFORM_VERSION into $FORMS_VENV" >&2
  python3 -m venv "$FORMS_VENV"
  "$FORMS_VENV/bin/pip" install -q --disable-pip-version-check "pyxform==$PYXFORM_VERSION" xlrd==2.0.1 openpyxl==3.1.5 \
    et-xmlfile==2.0.0 defusedxml==0.7.1 lark==1.3.1
fi

# The OData clients the tests read the feed with (Tests/OData/test_odata.py): python-odata reflects
# $metadata and reads every table, odata-query parses every $filter of Docs/odata.md.
ODATA_VENV="$(cd "$(dirname "$0")/.." && pwd)/.build/venv-odata"
if ! "$ODATA_VENV/bin/pip" show python-odata 2>/dev/null | grep -qx "Version: 0.8.1" \
   || ! "$ODATA_VENV/bin/pip" show odata-query 2>/dev/null | grep -qx "Version: 0.10.0"; then
  echo "setup: installing python-odata 0.8.1 and odata-query 0.10.0 into $ODATA_VENV" >&2
  python3 -m venv "$ODATA_VENV"
  "$ODATA_VENV/bin/pip" install -q --disable-pip-version-check python-odata==0.8.1 odata-query==0.10.0
fi

# pyodk, ODK's own Python client for ODK Central's API, which the tests run against surveyd's
# Central door (Tests/Central/test_pyodk.py) as a team's scripts would.
CENTRAL_VENV="$(cd "$(dirname "$0")/.." && pwd)/.build/venv-central"
if ! "$CENTRAL_VENV/bin/pip" show pyodk 2>/dev/null | grep -qx "Version: 1.3.0"; then
  echo "setup: installing pyodk 1.3.0 into $CENTRAL_VENV" >&2
  python3 -m venv "$CENTRAL_VENV"
  "$CENTRAL_VENV/bin/pip" install -q --disable-pip-version-check pyodk==1.3.0
fi
