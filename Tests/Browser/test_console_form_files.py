#!/usr/bin/env python3
"""Browser tests of a version's files and pyxform's warnings on the survey page, in a real
headless Chromium.

Run through scripts/browser_tests.sh (it runs this file after the others):

    scripts/browser_tests.sh                 # every file
    scripts/browser_tests.sh -k warnings     # the tests (of every file) whose name contains "warnings"

An XLSForm that pyxform converts with warnings (Tests/SurveyXFormTests/Fixtures/warnings.xlsx,
made by make_warned_xlsforms.py) is published from the survey page: the warnings are shown with
the version as pyxform's sentences, and stay there; the JSON API answers the same. Each version
offers what it was published from and, when it has one, its XForm for download through the
session, byte for byte. (A refused XLSForm's sheet and row: test_console_forms.py's
test_publish_an_xlsform_and_see_a_refusal_by_row.)

It reuses test_console.py's shared server, browser, sign-in and runner.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_console import (By, Server, browser, button, click_and_load, page_text, run_tests,  # noqa: E402
                          shared_server, sign_in_token, stop_shared_server, wait_loaded)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "SurveyXFormTests", "Fixtures")
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# What pyxform 4.5.0 says of warnings.xlsx, in its order (as Tests/EndToEndTests/ConversionWarningTests.swift expects).
WARNINGS = [
    "Language 'Français (fr)' is missing the survey hint column.",
    "[row : 3] Repeat has no label: {'name': 'children', 'type': 'begin_repeat'}",
    "[row : 6] Use the max-pixels parameter to speed up submission sending and save storage space. Learn more: https://xlsform.org/#image",
    "The following language declarations do not contain valid machine-readable codes: English. Learn more: http://xlsform.org#multiple-language-support",
]

_downloads = []  # the directory downloads go to, made when first needed; removed at the end


def fixture(name):
    return os.path.abspath(os.path.join(FIXTURES, name))


def fixture_bytes(name):
    with open(fixture(name), "rb") as f:
        return f.read()


def version_card(d, number):
    return d.find_element(By.XPATH, f"//section[contains(@class, 'card')][h2[normalize-space()='Version {number}']]")


def meta_of(card):
    return dict(zip([e.text for e in card.find_elements(By.CSS_SELECTOR, "dl.meta > dt")],
                    [e.text for e in card.find_elements(By.CSS_SELECTOR, "dl.meta > dd")]))


def publish_file(d, name):
    d.find_element(By.ID, "definition").send_keys(fixture(name))
    click_and_load(d, button(d, "Publish version"))


def download(d, link, timeout=20):
    """Click a download link; (file name, bytes) once the file is complete. Each download goes to
    a directory of its own (Chromium does not save a second file of the same name)."""
    if not _downloads:
        _downloads.append(tempfile.mkdtemp(prefix="surveyd-browser-files-"))
    directory = tempfile.mkdtemp(dir=_downloads[0])
    d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": directory})
    url_before = d.current_url
    link.click()
    deadline = time.time() + timeout
    while time.time() < deadline:
        names = os.listdir(directory)
        if names and not [n for n in names if n.endswith(".crdownload")]:
            with open(os.path.join(directory, names[0]), "rb") as f:
                return names[0], f.read()
        time.sleep(0.1)
    raise AssertionError(f"{link.text}: nothing downloaded within {timeout} s; page {d.current_url} (was {url_before}): {page_text(d)[:300]}")


def remove_downloads():
    import shutil
    for directory in _downloads:
        shutil.rmtree(directory, ignore_errors=True)


def links_of(card):
    return [a.text for a in card.find_elements(By.CSS_SELECTOR, "dd.files a")]


# ---------------------------------------------------------------------------------------------
# The tests

def test_xlsform_warnings_are_shown_with_the_version():
    srv = shared_server()
    sid = srv.api("POST", "/surveys", srv["ADMIN"], {"title": "Home visit (warnings)", "reviewRequired": False}, expect=(201,))["surveyId"]
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)

    publish_file(d, "warnings.xlsx")
    notice = d.find_element(By.CSS_SELECTOR, ".notice").text
    assert notice == "Version 1 is published. pyxform gave 4 warnings on converting it; they are listed with the version.", notice
    card = version_card(d, 1)
    box = card.find_element(By.CSS_SELECTOR, ".warnings")
    assert box.find_element(By.TAG_NAME, "h3").text == "4 warnings from pyxform", box.text
    shown = [li.text for li in box.find_elements(By.TAG_NAME, "li")]
    assert shown == WARNINGS, shown
    # Sentences, not a stack trace or a report: no traceback, no JSON.
    for absent in ("Traceback", 'File "', '"code"', "pyxform.errors"):
        assert absent not in page_text(d), f"{absent!r} on the page"
    assert not d.find_elements(By.CSS_SELECTOR, ".problem"), "a warning was shown as a refusal"
    assert meta_of(card)["Published from"] == "an XLSForm (.xlsx)", meta_of(card)

    # The API answers the same sentences on the version; they stay on the page after a reload.
    versions = srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"]
    assert srv.api("GET", f"/survey-versions/{versions[0]['surveyVersionId']}", srv["ADMIN"])["warnings"] == WARNINGS
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    assert [li.text for li in version_card(d, 1).find_elements(By.CSS_SELECTOR, ".warnings li")] == WARNINGS
    assert not d.find_elements(By.CSS_SELECTOR, ".notice")

    # An XLSForm pyxform has nothing to say about: no warnings, with it or in the notice.
    publish_file(d, "simple.xlsx")
    assert d.find_element(By.CSS_SELECTOR, ".notice").text == "Version 2 is published."
    assert not version_card(d, 2).find_elements(By.CSS_SELECTOR, ".warnings")
    assert len(version_card(d, 1).find_elements(By.CSS_SELECTOR, ".warnings li")) == 4
    latest = srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"][-1]
    assert srv.api("GET", f"/survey-versions/{latest['surveyVersionId']}", srv["ADMIN"])["warnings"] == []


def test_download_a_versions_source_and_xform():
    # A server of its own: the other test publishes warnings.xlsx and simple.xlsx in a survey of
    # the shared organization, and a form id names one survey of an organization.
    srv = Server()
    try:
        _download_a_versions_source_and_xform(srv)
    finally:
        srv.stop()


def _download_a_versions_source_and_xform(srv):
    sid = srv.api("POST", "/surveys", srv["ADMIN"], {"title": "Home visit — files", "reviewRequired": False}, expect=(201,))["surveyId"]
    d = browser()
    sign_in_token(d, srv, srv["ADMIN"])
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    publish_file(d, "warnings.xlsx")   # version 1: an XLSForm
    publish_file(d, "simple.xml")      # version 2: an XForm
    definition = {"title": "Home visit", "questions": [{"id": "people", "type": "integer", "label": "People"}]}
    srv.api("POST", f"/surveys/{sid}/versions", srv["ADMIN"], {"definition": definition}, expect=(201,))  # version 3: JSON
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}")
    wait_loaded(d)
    ids = {v["number"]: v["surveyVersionId"] for v in srv.api("GET", f"/surveys/{sid}", srv["ADMIN"])["versions"]}

    # The XLSForm as uploaded, and the XForm pyxform made of it (the API's, byte for byte).
    card = version_card(d, 1)
    assert links_of(card) == ["Download the XLSForm", "Download the XForm"], links_of(card)
    name, data = download(d, card.find_element(By.LINK_TEXT, "Download the XLSForm"))
    assert name == "home-visit-files-v1.xlsx" and data == fixture_bytes("warnings.xlsx"), (name, len(data))
    name, data = download(d, card.find_element(By.LINK_TEXT, "Download the XForm"))
    status, headers, api_xform = srv.request("GET", f"/v1/orgs/{srv['ORG']}/survey-versions/{ids[1]}/xform", srv["ADMIN"])
    assert status == 200 and name == "home-visit-files-v1.xml" and data == api_xform, (name, status)
    assert b"<h:title>Visit with warnings</h:title>" in data

    # An XForm: its one file, as uploaded.
    card = version_card(d, 2)
    assert links_of(card) == ["Download the XForm"] and meta_of(card)["Published from"] == "an XForm", (links_of(card), meta_of(card))
    name, data = download(d, card.find_element(By.LINK_TEXT, "Download the XForm"))
    assert name == "home-visit-files-v2.xml" and data == fixture_bytes("simple.xml"), name

    # JSON: the definition, and the XForm written from it (the API's bytes).
    card = version_card(d, 3)
    assert links_of(card) == ["Download the JSON definition", "Download the XForm"] and meta_of(card)["Published from"] == "a JSON definition", links_of(card)
    name, data = download(d, card.find_element(By.LINK_TEXT, "Download the JSON definition"))
    assert name == "home-visit-files-v3.json" and json.loads(data) == definition, (name, data[:200])
    name, data = download(d, card.find_element(By.LINK_TEXT, "Download the XForm"))
    status, _, api_generated = srv.request("GET", f"/v1/orgs/{srv['ORG']}/survey-versions/{ids[3]}/xform", srv["ADMIN"])
    assert status == 200 and name == "home-visit-files-v3.xml" and data == api_generated, (name, status)

    # The downloads are the session's: signed out, the same link is the sign-in page, not the file.
    d.delete_all_cookies()
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/survey-versions/{ids[1]}/source")
    wait_loaded(d)
    assert "/console/sign-in" in d.current_url, d.current_url


TESTS = [
    test_xlsform_warnings_are_shown_with_the_version,
    test_download_a_versions_source_and_xform,
]


if __name__ == "__main__":
    sys.exit(run_tests(TESTS, sys.argv[1:], "browser tests (a version's files and pyxform's warnings)",
                       finish=[stop_shared_server, remove_downloads]))
