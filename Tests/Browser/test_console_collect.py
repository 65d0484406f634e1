#!/usr/bin/env python3
"""Browser test of the ODK Collect QR code on a collector's user page, in a real headless Chromium.

Run through scripts/browser_tests.sh (it runs this file after the others):

    scripts/browser_tests.sh                 # every file
    scripts/browser_tests.sh -k collect      # the tests (of every file) whose name contains "collect"

An admin adds a collector in the console: beside the one-time app token, the page shows the QR
code ODK Collect and KoboCollect scan to add a project. The code is read off the screen as a
phone's camera would (zbarimg, from Debian's zbar-tools, on a screenshot of it), then decoded as
Collect does — base64, zlib, JSON — to the OpenRosa server URL with that token, and that URL
answers the form list. Screenshots: Docs/console/user-collect-{desktop,phone}.png.

It reuses test_console.py's shared server, browser, sign-in and runner.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import uuid
import xml.etree.ElementTree as ET
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_console import (DESKTOP, PHONE, By, browser, click_and_load, page_text, run_tests,  # noqa: E402
                          set_viewport, shared_server, sign_in_token, stop_shared_server)
from test_console_admin import button, check_qr, checkbox, fill, secrets, set_checked  # noqa: E402

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Docs", "console")


def read_qr(d, svg):
    """The text of a QR code on the page, as a camera reads it: a screenshot decoded by zbarimg."""
    d.execute_script("arguments[0].scrollIntoView()", svg)
    with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as f:
        f.write(svg.screenshot_as_png)
        path = f.name
    try:
        out = subprocess.run(["zbarimg", "--raw", "-q", path], capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            os.makedirs(".build/browser-artifacts", exist_ok=True)
            shutil.copy(path, ".build/browser-artifacts/unreadable-qr.png")
        assert out.returncode == 0, f"zbarimg could not read the QR code (.build/browser-artifacts/unreadable-qr.png): {out.stderr}"
        return out.stdout.strip()
    finally:
        os.unlink(path)


def test_collect_qr_code_sets_up_a_phone():
    srv = shared_server()
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/users")
    name = "Cora Collector " + uuid.uuid4().hex[:4]
    fill(d, "Name", name)
    set_checked(checkbox(d, "Collector"), True)
    click_and_load(d, button(d, "Add user"))
    shown = secrets(d)
    token = [s for s in shown if s[1].startswith("sdt_")]
    collect = [s for s in shown if "/v1/key/" in s[1]]
    assert len(token) == 1 and len(collect) == 1, [s[:2] for s in shown]
    heading, url, svg = collect[0]
    assert "ODK Collect" in heading and name in heading, heading
    assert url == f"{srv.base}/v1/key/{token[0][1]}/orgs/{srv['ORG']}", url
    check_qr(d, svg, "ODK Collect settings")

    # What Collect reads from the code: base64 of zlib-compressed JSON.
    settings = json.loads(zlib.decompress(base64.b64decode(read_qr(d, svg))))
    assert settings["general"]["server_url"] == url, settings
    assert settings["general"]["form_update_mode"] == "match_exactly", settings
    assert settings["project"]["name"] == "Demo Field Team", settings

    # The URL works as Collect uses it: the form list names the demo's survey.
    req = urllib.request.Request(url + "/formList", headers={"X-OpenRosa-Version": "1.0"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200 and r.headers["X-OpenRosa-Version"] == "1.0"
        forms = ET.fromstring(r.read())
    names = [x.findtext("{http://openrosa.org/xforms/xformsList}name") for x in forms]
    assert "Household water survey" in names, names

    for size, mobile, scale, label in ((DESKTOP, False, 1, "desktop"), (PHONE, True, 2, "phone")):
        set_viewport(d, size, mobile, scale)
        card = d.find_element(By.XPATH, "//section[contains(@class, 'secret')][.//h2[contains(., 'ODK Collect')]]")
        d.execute_script("arguments[0].scrollIntoView()", card)
        assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1"), f"{label}: the page scrolls sideways"
        d.save_screenshot(os.path.join(DOCS, f"user-collect-{label}.png"))
    assert "Shown only now" in page_text(d)


TESTS = [
    test_collect_qr_code_sets_up_a_phone,
]


if __name__ == "__main__":
    sys.exit(run_tests(TESTS, sys.argv[1:], "browser tests (the ODK Collect QR code)", finish=[stop_shared_server]))
