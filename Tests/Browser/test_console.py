#!/usr/bin/env python3
"""Browser tests of surveyd's web console (/console/), in a real headless Chromium via Selenium.

Run through scripts/browser_tests.sh (it installs Chromium, chromedriver and Selenium first):

    scripts/browser_tests.sh                 # every test
    scripts/browser_tests.sh -k stale        # the tests whose name contains "stale"

Each test drives a real `surveyd serve --demo` (SURVEYD_BIN, default .build/debug/surveyd) on a
free loopback port with a fresh temporary data dir, clicks through the pages as a person would,
and checks what happened both on the page and through the JSON API. One demo server is shared by
the tests that do not change the organization; the expired-subscription test has its own.

On a failure the page's screenshot and HTML are kept in .build/browser-artifacts/. The last
line is "N passed, N failed"; the exit status is 1 when any test failed.

What is defined here (Server, browser, sign-in, submit ... and run_tests, the runner) is also
used by test_console_admin.py, test_console_forms.py and scripts/console_screenshots.py.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse
import uuid
import zlib

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SURVEYD_BIN = os.path.join(ROOT, os.environ.get("SURVEYD_BIN", ".build/debug/surveyd"))
ARTIFACTS = os.path.join(ROOT, ".build", "browser-artifacts")
DESKTOP = (1280, 900)
PHONE = (375, 812)


# ---------------------------------------------------------------------------------------------
# The server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `surveyd serve --demo` on a fresh data dir and a free port; `env` holds the demo's
    export line (ORG, OP, ADMIN, COLLECTOR, REVIEWER, VERSION, HASH)."""

    def __init__(self):
        if not os.access(SURVEYD_BIN, os.X_OK):
            raise RuntimeError(f"{SURVEYD_BIN} is not an executable: build surveyd first (swift build)")
        self.tmp = tempfile.mkdtemp(prefix="surveyd-browser-")
        self.data_dir = os.path.join(self.tmp, "data")
        os.mkdir(self.data_dir)
        self.log_path = os.path.join(self.tmp, "server.log")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            # --webhooks-allow-private: the webhook page's test delivers to a receiver on loopback.
            [SURVEYD_BIN, "serve", "--demo", "--port", str(self.port), "--data-dir", self.data_dir, "--webhooks-allow-private"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
        self.env = self._wait_for_export_line()

    def _wait_for_export_line(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            m = re.search(r"^\s*export (ORG=.*)$", text, re.M)
            if m:
                return dict(pair.split("=", 1) for pair in m.group(1).split())
            if self.proc.poll() is not None:
                raise RuntimeError(f"surveyd exited with {self.proc.returncode} before the demo was seeded:\n{text}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"no export line from surveyd within {timeout} s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __getitem__(self, name):
        return self.env[name]

    # ---- the JSON API

    def request(self, method, path, token=None, body=None, data=None, headers=None):
        """(status, headers, parsed JSON or raw bytes) of one request."""
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        if hdrs.get("content-type", "").startswith("application/") and "json" in hdrs.get("content-type", "") and raw:
            return resp.status, hdrs, json.loads(raw)
        return resp.status, hdrs, raw

    def api(self, method, path, token, body=None, expect=(200, 201, 204), **kw):
        status, _, out = self.request(method, "/v1/orgs/" + self["ORG"] + path, token, body, **kw)
        assert status in expect, f"{method} {path} answered {status}, expected {expect}: {out!r}"
        return out

    def response(self, rid):
        return self.api("GET", f"/responses/{rid}", self["REVIEWER"])

    def state(self, rid):
        r = self.response(rid)
        return r["reviewState"], r["revision"]

    def history(self, rid):
        return self.api("GET", f"/responses/{rid}/history", self["REVIEWER"])["items"]

    def review(self, rid, action, revision, comment=None):
        body = {"action": action, "expectedRevision": revision}
        if comment:
            body["comment"] = comment
        return self.api("POST", f"/responses/{rid}/review", self["REVIEWER"], body)

    def create_user(self, name, roles):
        return self.api("POST", "/users", self["ADMIN"], {"name": name, "roles": roles}, expect=(201,))

    def invite(self, user_id, email):
        out = self.api("POST", f"/users/{user_id}/invitations", self["ADMIN"], {"email": email}, expect=(201,))
        assert out["email"] == email and out["userId"] == user_id, out
        assert out["invitationUrl"].startswith(self.base + "/console/invitations/"), out
        return out["invitationUrl"]

    def upload_photo(self, upload_id, width=200, height=120):
        self.api("PUT", f"/uploads/{upload_id}", self["COLLECTOR"], data=png(width, height), expect=(200, 201),
                 headers={"Content-Type": "image/png", "Survey-Version-Id": self["VERSION"], "Question-Id": "photo"})

    def submit(self, answers=None, csid=None, photo=False, location=False):
        """A response synced by the collector; its responseId."""
        answers = dict(answers or {"household_size": 4, "water_source": "well", "notes": "Borehole by the school."})
        if location:
            answers["location"] = {"lat": -1.29, "lon": 36.82, "accuracy": 5}
        if photo:
            upload_id = "photo-" + uuid.uuid4().hex[:12]
            self.upload_photo(upload_id)
            answers["photo"] = {"clientUploadId": upload_id}
        body = {"clientSubmissionId": csid or "bt-" + uuid.uuid4().hex[:16], "surveyVersionId": self["VERSION"],
                "contentHash": self["HASH"], "answers": answers}
        out = self.api("POST", "/responses", self["COLLECTOR"], body, expect=(201,))
        assert out["reviewState"] == "submitted" and out["revision"] == 1, out
        return out["responseId"]

    def resubmit(self, rid, revision, answers):
        return self.api("POST", f"/responses/{rid}/resubmit", self["COLLECTOR"],
                        {"expectedRevision": revision, "surveyVersionId": self["VERSION"], "contentHash": self["HASH"],
                         "answers": answers})

    def survey_id(self):
        return self.api("GET", "/surveys", self["ADMIN"])["items"][0]["surveyId"]


def png(width, height):
    """A real RGB PNG: a gradient with a darker band, so a screenshot shows it is an image."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            band = 60 if height // 3 < y < 2 * height // 3 else 0
            row += bytes([30 + x * 180 // width, max(0, 140 + y * 100 // height - band), 200 - band])
        rows.append(bytes(row))

    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------
# The browser

_drivers = []


def browser(size=DESKTOP, mobile=False, scale=1):
    """A headless Chromium whose viewport is exactly `size` CSS pixels."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("CHROME_BIN") or shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={size[0]},{size[1]}", "--lang=en-US", "--hide-scrollbars"):
        opts.add_argument(arg)
    driver_path = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
    d = webdriver.Chrome(options=opts, service=Service(executable_path=driver_path))
    d.set_page_load_timeout(30)
    _drivers.append(d)
    set_viewport(d, size, mobile, scale)
    return d


def set_viewport(d, size, mobile=False, scale=1):
    # A window is never narrower than 500 px, and has a frame: the viewport is set exactly instead.
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": size[0], "height": size[1], "deviceScaleFactor": scale, "mobile": mobile})


def quit_browsers():
    while _drivers:
        try:
            _drivers.pop().quit()
        except Exception:
            pass


def wait_loaded(d):
    WebDriverWait(d, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")


def click_and_load(d, element):
    """Click something that loads a new page, and wait for that page."""
    d.execute_script("window.__surveydOldPage = true")  # gone once the next document is there

    def loaded(d):
        try:
            return d.execute_script("return !window.__surveydOldPage && document.readyState === 'complete'")
        except WebDriverException:  # between two documents
            return False

    element.click()
    WebDriverWait(d, 20).until(loaded)


def xpath_literal(s):
    return "'" + s + "'" if "'" not in s else 'concat("' + s.replace('"', '", \'"\', "') + '")'


def field(d, label):
    """The input a <label> with this exact text is for."""
    lab = d.find_element(By.XPATH, f"//label[normalize-space()={xpath_literal(label)}]")
    return d.find_element(By.ID, lab.get_attribute("for"))


def button(d, text):
    return d.find_element(By.XPATH, f"//button[normalize-space()={xpath_literal(text)}]")


def buttons(d, text):
    return d.find_elements(By.XPATH, f"//button[normalize-space()={xpath_literal(text)}]")


def fill(d, label, value):
    el = field(d, label)
    el.clear()
    el.send_keys(value)


def page_text(d):
    return d.find_element(By.TAG_NAME, "body").text


def problem_text(d):
    found = d.find_elements(By.CSS_SELECTOR, ".problem")
    return found[0].text if found else ""


def path_of(d):
    return urllib.parse.urlsplit(d.current_url).path


def sign_in_token(d, srv, token):
    d.get(srv.base + "/console/sign-in")
    fill(d, "API token", token)
    click_and_load(d, button(d, "Sign in with token"))
    # Operators land on their organizations page; everyone else on the review desk's home.
    assert path_of(d) in ("/console/", "/console/operator/orgs"), f"token sign-in ended on {d.current_url}: {problem_text(d)}"


def sign_in_password(d, srv, email, password):
    d.get(srv.base + "/console/sign-in")
    fill(d, "Email", email)
    fill(d, "Password", password)
    click_and_load(d, button(d, "Sign in"))


def accept_invitation(d, url, password):
    d.get(url)
    assert "Set your password" in page_text(d), page_text(d)
    fill(d, "New password", password)
    click_and_load(d, button(d, "Set password"))


def invited_user(d, srv, name, roles):
    """A new user who accepted an invitation in the browser (not yet signed in)."""
    user = srv.create_user(name, roles)
    email = f"{name.split()[0].lower()}-{uuid.uuid4().hex[:8]}@example.org"
    password = "correct horse battery " + uuid.uuid4().hex[:6]
    url = srv.invite(user["userId"], email)
    accept_invitation(d, url, password)
    user["invitationUrl"] = url
    return user, email, password


def open_response(d, srv, rid):
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/responses/{rid}")
    wait_loaded(d)
    assert rid in page_text(d), f"the response page of {rid} does not show it: {page_text(d)[:500]}"


def shown_state(d):
    """The state label and revision the response page shows."""
    dl = d.find_element(By.CSS_SELECTOR, "dl.meta")
    pairs = dict(zip([e.text for e in dl.find_elements(By.TAG_NAME, "dt")], [e.text for e in dl.find_elements(By.TAG_NAME, "dd")]))
    return pairs.get("State"), pairs.get("Revision")


def checkbox_for(d, rid):
    boxes = [b for b in d.find_elements(By.CSS_SELECTOR, "input[type=checkbox][name=item]")
             if b.get_attribute("value").split(":")[0] == rid]
    assert len(boxes) == 1, f"queue has {len(boxes)} checkboxes for {rid}"
    return boxes[0]


def results_by_response(d):
    """The bulk action's result list: {responseId: (kind, text)}."""
    out = {}
    for li in d.find_elements(By.CSS_SELECTOR, "ul.results li"):
        text = li.text
        rid, _, said = text.partition(": ")
        out[rid.strip()] = (li.get_attribute("class"), said.strip())
    return out


def post_form(srv, path, fields, cookie=None, headers=None):
    """A form POST outside the browser (no redirects followed): (status, headers, body text)."""
    h = {"Content-Type": "application/x-www-form-urlencoded"}
    if cookie:
        h["Cookie"] = cookie
    h.update(headers or {})
    status, hdrs, raw = srv.request("POST", path, data=urllib.parse.urlencode(fields).encode(), headers=h)
    return status, hdrs, raw.decode("utf-8", "replace") if isinstance(raw, bytes) else json.dumps(raw)


# ---------------------------------------------------------------------------------------------
# The tests

_shared = None


def shared_server():
    global _shared
    if _shared is None:
        _shared = Server()
    return _shared


def test_invitation_password_and_token_sign_in():
    srv = shared_server()
    d = browser()
    user, email, password = invited_user(d, srv, "Rita Reviewer", ["reviewer"])
    notice = d.find_elements(By.CSS_SELECTOR, ".notice")
    assert notice and "password is set" in notice[0].text.lower(), f"no notice after setting the password: {page_text(d)[:400]}"
    assert field(d, "Email").get_attribute("value") == email, "the sign-in form should carry the invited email"

    # The link works once.
    d.get(user["invitationUrl"])
    assert "no longer works" in page_text(d) and not d.find_elements(By.ID, "password"), page_text(d)[:300]

    # Email and password.
    sign_in_password(d, srv, email, password)
    assert path_of(d) == "/console/", f"password sign-in ended on {d.current_url}: {problem_text(d)}"
    cookie = d.get_cookie("surveyd_session")
    assert cookie and cookie["httpOnly"], f"session cookie: {cookie}"
    assert "Rita Reviewer" in d.find_element(By.CSS_SELECTOR, ".top").text
    link = d.find_element(By.LINK_TEXT, "Household water survey")
    assert link.get_attribute("href").endswith("/responses?state=submitted"), link.get_attribute("href")
    assert "Demo Field Team" in page_text(d)

    # Signing out ends the session: the home page asks for a sign-in again.
    click_and_load(d, button(d, "Sign out"))
    assert path_of(d) == "/console/sign-in", d.current_url
    d.get(srv.base + "/console/")
    assert path_of(d) == "/console/sign-in", f"after sign-out /console/ showed {d.current_url}"

    # A wrong password and an unknown email answer the same.
    sign_in_password(d, srv, email, "not the password at all")
    wrong_password = problem_text(d)
    assert path_of(d) == "/console/sign-in" and wrong_password, f"wrong password: {d.current_url} {page_text(d)[:300]}"
    assert d.get_cookie("surveyd_session") is None
    sign_in_password(d, srv, "nobody-" + uuid.uuid4().hex[:6] + "@example.org", "not the password at all")
    unknown_email = problem_text(d)
    assert unknown_email == wrong_password, f"unknown email said {unknown_email!r}, wrong password said {wrong_password!r}"
    assert d.get_cookie("surveyd_session") is None

    # An API token (the operator's).
    sign_in_token(d, srv, srv["OP"])
    assert "Operator" in d.find_element(By.CSS_SELECTOR, ".top").text
    assert "Demo Field Team" in page_text(d), page_text(d)[:400]
    # The operator is no member of the organization: its survey queue is not theirs.
    d.get(f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}/responses")
    assert "Not found" in page_text(d), page_text(d)[:300]


def test_review_chain_clicked_through():
    srv = shared_server()
    rid = srv.submit(location=True, photo=True)
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])

    # Home → queue → the response.
    click_and_load(d, d.find_element(By.LINK_TEXT, "Household water survey"))
    assert "Review queue" in page_text(d)
    link = d.find_element(By.XPATH, f"//table[contains(@class,'queue')]//a[contains(@href, '/responses/{rid}')]")
    click_and_load(d, link)
    assert path_of(d) == f"/console/orgs/{srv['ORG']}/responses/{rid}"
    assert shown_state(d) == ("Submitted", "1"), shown_state(d)
    photo = d.find_element(By.CSS_SELECTOR, "img.photo")
    assert d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", photo) == 200, "the photo did not load"
    assert "-1.29, 36.82" in page_text(d)
    assert [b.text for b in d.find_elements(By.CSS_SELECTOR, "form[action$='/review'] button")] == ["Start review"]

    click_and_load(d, button(d, "Start review"))
    assert srv.state(rid) == ("in_review", 2), srv.state(rid)
    assert shown_state(d) == ("In review", "2"), shown_state(d)

    # Return needs a comment: without one nothing changes.
    click_and_load(d, button(d, "Return for correction"))
    assert problem_text(d), "returning without a comment showed no problem"
    assert srv.state(rid) == ("in_review", 2), srv.state(rid)

    comment = "Household size looks wrong; please recount. Ünïcode & <b>kept</b>"
    fill(d, "Comment", comment)
    click_and_load(d, button(d, "Return for correction"))
    assert srv.state(rid) == ("returned", 3), srv.state(rid)
    assert shown_state(d) == ("Returned", "3"), shown_state(d)
    assert comment in page_text(d), "the comment is not in the page's history"

    # The collector corrects and resubmits.
    answers = {"household_size": 5, "water_source": "well", "notes": "Recounted: five people."}
    out = srv.resubmit(rid, 3, answers)
    assert out["reviewState"] == "submitted" and out["revision"] == 4, out
    d.refresh()
    wait_loaded(d)
    assert shown_state(d) == ("Submitted", "4"), shown_state(d)
    assert "Recounted: five people." in page_text(d)

    click_and_load(d, button(d, "Start review"))
    assert srv.state(rid) == ("in_review", 5), srv.state(rid)
    click_and_load(d, button(d, "Approve"))
    assert srv.state(rid) == ("approved", 6), srv.state(rid)
    assert shown_state(d) == ("Approved", "6"), shown_state(d)
    assert not d.find_elements(By.CSS_SELECTOR, "form[action$='/review'] button"), "an approved response still offers actions"

    items = srv.history(rid)
    assert [i.get("comment") for i in items if i.get("comment")] == [comment], items
    assert [i["toState"] for i in items][-5:] == ["in_review", "returned", "submitted", "in_review", "approved"], items
    blockquotes = [b.text for b in d.find_elements(By.CSS_SELECTOR, ".history blockquote")]
    assert blockquotes == [comment], blockquotes


def test_stale_page_changes_nothing():
    srv = shared_server()
    rid = srv.submit()
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, rid)
    assert shown_state(d) == ("Submitted", "1")

    srv.review(rid, "startReview", 1)  # elsewhere, meanwhile
    assert srv.state(rid) == ("in_review", 2)
    before = len(srv.history(rid))

    click_and_load(d, button(d, "Start review"))
    text = page_text(d)
    assert "changed since you opened it" in text, text[:600]
    assert "In review" in problem_text(d), f"the refusal does not name the current state: {problem_text(d)!r}"
    assert srv.state(rid) == ("in_review", 2), srv.state(rid)
    assert len(srv.history(rid)) == before
    # The page now shows the current state, so the next step is on the right revision.
    assert shown_state(d) == ("In review", "2"), shown_state(d)


def test_answers_edited_on_the_response_page():
    """A reviewer edits the answers in the form on the response page: a new version, state
    Edited, the earlier answers kept; answers that break the form's rules change nothing."""
    srv = shared_server()
    rid = srv.submit()
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, rid)
    d.find_element(By.CSS_SELECTOR, "#edit summary").click()
    size = field(d, "People in the household household_size")
    assert size.get_attribute("value") == "4", size.get_attribute("value")
    assert Select(field(d, "Main water source water_source")).first_selected_option.get_attribute("value") == "well"
    size.clear()
    size.send_keys("7")
    Select(field(d, "Main water source water_source")).select_by_value("borehole")
    fill(d, "Why (kept in the history)", "Recounted with the household")
    click_and_load(d, button(d, "Save the answers"))
    assert shown_state(d) == ("Edited", "2"), (shown_state(d), problem_text(d))
    assert "the answers were edited" in page_text(d), page_text(d)[:500]
    r = srv.response(rid)
    assert r["answers"]["household_size"] == 7 and r["answers"]["water_source"] == "borehole" and r["reviewState"] == "edited", r
    versions = srv.api("GET", f"/responses/{rid}/versions", srv["REVIEWER"])["items"]
    assert [(v["number"], v["source"], v["answers"]["household_size"]) for v in versions] == [(1, "submission", 4), (2, "console", 7)], versions
    assert "Recounted with the household" in page_text(d)
    # From edited: approve, reject or flag issues.
    assert [b.text for b in d.find_elements(By.CSS_SELECTOR, "form[action$='/review'] button")] == ["Approve", "Reject", "Flag issues"]

    # A size over the form's maximum: refused at its path, nothing changed.
    d.find_element(By.CSS_SELECTOR, "#edit summary").click()
    size = field(d, "People in the household household_size")
    size.clear()
    size.send_keys("99")
    click_and_load(d, button(d, "Save the answers"))
    assert "answers.household_size" in problem_text(d), problem_text(d)
    assert srv.state(rid) == ("edited", 2), srv.state(rid)
    assert len(srv.api("GET", f"/responses/{rid}/versions", srv["REVIEWER"])["items"]) == 2


def test_bulk_start_review_and_approve():
    srv = shared_server()
    rids = [srv.submit(answers={"household_size": n, "water_source": "river"}) for n in (2, 3, 7)]
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    queue = f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}/responses"

    def bulk(state, label):
        """Ticks `rids` in the queue's `state` tab, presses `label`, returns the results listed."""
        d.get(queue + "?state=" + state)
        for rid in rids:
            checkbox_for(d, rid).click()
        click_and_load(d, button(d, label))
        return results_by_response(d)

    results = bulk("submitted", "Start review of selected")
    assert set(results) == set(rids), results
    for rid in rids:
        assert results[rid] == ("ok", "review started"), results[rid]
        assert srv.state(rid) == ("in_review", 2), srv.state(rid)

    results = bulk("in_review", "Approve selected")
    assert set(results) == set(rids), results
    for rid in rids:
        assert results[rid] == ("ok", "approved"), results[rid]
        assert srv.state(rid) == ("approved", 3), srv.state(rid)

    # Approving them again: each refused, each said so, nothing changes.
    results = bulk("approved", "Approve selected")
    for rid in rids:
        assert results[rid][0] == "refused", results[rid]
        assert srv.state(rid) == ("approved", 3)


def queue_rows(d):
    """The response ids the queue lists, in its order."""
    return [a.text for a in d.find_elements(By.CSS_SELECTOR, "table.queue tbody tr td:nth-child(2) a")]


def apply_filters(d, version="Any version", submitter="Anyone", task="", received_from="", received_before=""):
    """Sets every field of the queue's filter form (opening it when closed) and applies it."""
    details = d.find_element(By.CSS_SELECTOR, "details.filters")
    if details.get_attribute("open") is None:
        details.find_element(By.TAG_NAME, "summary").click()
    Select(field(d, "Version")).select_by_visible_text(version)
    Select(field(d, "Submitted by")).select_by_visible_text(submitter)
    field(d, "Field task id").clear()
    if task:
        field(d, "Field task id").send_keys(task)
    for label, value in (("Received from", received_from), ("Received before", received_before)):
        d.execute_script("arguments[0].value = arguments[1]", field(d, label), value)
    click_and_load(d, button(d, "Apply filters"))


def test_queue_filters_by_version_submitter_task_and_date():
    srv = shared_server()
    title = "Filtered visits " + uuid.uuid4().hex[:4]
    survey = srv.api("POST", "/surveys", srv["ADMIN"], {"title": title, "reviewRequired": True}, expect=(201,))
    sid = survey["surveyId"]
    questions = [{"id": "household_size", "type": "integer", "label": "People", "required": True}]
    v1 = srv.api("POST", f"/surveys/{sid}/versions", srv["ADMIN"], {"definition": {"title": title, "questions": questions}}, expect=(201,))
    v2 = srv.api("POST", f"/surveys/{sid}/versions", srv["ADMIN"],
                 {"definition": {"title": title, "questions": questions + [{"id": "notes", "type": "text", "label": "Notes"}]}}, expect=(201,))
    second = srv.create_user("Sol Second " + uuid.uuid4().hex[:4], ["collector"])
    task = srv.api("POST", "/tasks", srv["ADMIN"], {"title": "Visit the mill", "surveyId": sid, "assigneeUserId": second["userId"]}, expect=(201,))

    def sync(version, token, size, task_id=None):
        body = {"clientSubmissionId": "bt-" + uuid.uuid4().hex[:16], "surveyVersionId": version["surveyVersionId"],
                "contentHash": version["contentHash"], "answers": {"household_size": size}}
        if task_id:
            body["fieldTaskId"] = task_id
        return srv.api("POST", "/responses", token, body, expect=(201,))["responseId"]

    first_version = sync(v1, srv["COLLECTOR"], 2)
    coles = sync(v2, srv["COLLECTOR"], 3)
    sols = sync(v2, second["token"], 4, task["taskId"])
    everything = {first_version, coles, sols}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86_400))

    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    queue = f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{sid}/responses"
    d.get(queue)
    wait_loaded(d)
    assert set(queue_rows(d)) == everything, queue_rows(d)
    assert d.find_element(By.CSS_SELECTOR, "details.filters").get_attribute("open") is None, "the filters are open without a filter"

    apply_filters(d, version="Version 2")
    assert set(queue_rows(d)) == {coles, sols}, queue_rows(d)
    assert d.find_element(By.CSS_SELECTOR, "details.filters").get_attribute("open") is not None, "the applied filter is hidden"
    assert Select(field(d, "Version")).first_selected_option.text == "Version 2"
    tabs = {a.text.rsplit(" ", 1)[0]: a for a in d.find_elements(By.CSS_SELECTOR, "ul.tabs a")}
    assert tabs["All"].text == "All 2" and tabs["Submitted"].text == "Submitted 2", [a.text for a in tabs.values()]
    # A state tab keeps the filter.
    click_and_load(d, tabs["Submitted"])
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(d.current_url).query)
    assert query == {"state": ["submitted"], "version": [v2["surveyVersionId"]]}, query
    assert set(queue_rows(d)) == {coles, sols}, queue_rows(d)

    apply_filters(d, submitter=second["name"])
    assert queue_rows(d) == [sols], queue_rows(d)
    assert Select(field(d, "Submitted by")).first_selected_option.text == second["name"]

    apply_filters(d, task=task["taskId"])
    assert queue_rows(d) == [sols], queue_rows(d)
    apply_filters(d, version="Version 1", task=task["taskId"])
    assert queue_rows(d) == [] and "No responses match." in page_text(d), page_text(d)[:400]

    apply_filters(d, received_from=tomorrow)
    assert queue_rows(d) == [] and "No responses match." in page_text(d)
    apply_filters(d, received_from=today, received_before=tomorrow)
    assert set(queue_rows(d)) == everything, queue_rows(d)
    apply_filters(d, received_before=today)
    assert queue_rows(d) == [], queue_rows(d)
    assert field(d, "Received before").get_attribute("value") == today


def test_expired_subscription_banner_and_disabled_buttons():
    srv = Server()  # its own organization: this one ends its subscription
    try:
        rid = srv.submit(photo=True, location=True)
        d = browser()
        sign_in_token(d, srv, srv["REVIEWER"])
        assert not d.find_elements(By.CSS_SELECTOR, ".banner"), "a banner before the subscription expired"

        srv.api("PUT", "/subscription", srv["OP"], {"expiresAt": "2020-01-01T00:00:00Z"})
        sub = srv.api("GET", "/subscription", srv["COLLECTOR"])
        assert "2020-01-01" in json.dumps(sub), sub

        pages = {
            "home": srv.base + "/console/",
            "queue": f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}/responses?state=submitted",
            "response": f"{srv.base}/console/orgs/{srv['ORG']}/responses/{rid}",
        }
        for name, url in pages.items():
            d.get(url)
            banner = d.find_elements(By.CSS_SELECTOR, ".banner")
            assert banner and "expired" in banner[0].text, f"{name}: no expired banner: {page_text(d)[:300]}"

        d.get(pages["queue"])
        assert rid in page_text(d), "the queue of an expired organization does not list the response"
        for label in ("Start review of selected", "Approve selected"):
            assert not button(d, label).is_enabled(), f"{label} is enabled"

        d.get(pages["response"])
        review_buttons = d.find_elements(By.CSS_SELECTOR, "form[action$='/review'] button")
        assert review_buttons, "the response page offers no review button at all"
        assert all(not b.is_enabled() for b in review_buttons), [b.text for b in review_buttons]
        # Reading still works: answers, the photo, the history.
        assert "Borehole by the school." in page_text(d)
        photo = d.find_element(By.CSS_SELECTOR, "img.photo")
        assert d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", photo) == 200
        assert "Submitted" in d.find_element(By.CSS_SELECTOR, ".history").text
        assert srv.state(rid) == ("submitted", 1)

        # A forced click (the disabled attribute removed) is refused by the server all the same.
        d.execute_script("document.querySelectorAll('form button').forEach(b => b.removeAttribute('disabled'))")
        click_and_load(d, button(d, "Start review"))
        assert "expired" in page_text(d).lower()
        assert srv.state(rid) == ("submitted", 1), srv.state(rid)
    finally:
        quit_browsers()
        srv.stop()


XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def test_answers_are_shown_as_text():
    srv = shared_server()
    rid = srv.submit(answers={"household_size": 4, "water_source": "well", "notes": XSS})
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, rid)
    time.sleep(0.2)  # time for an onerror handler to have run, had the markup become an element
    assert XSS in page_text(d), "the notes are not shown as their text"
    answers = [e.text for e in d.find_elements(By.CSS_SELECTOR, "dl.answers .answer")]
    assert XSS in answers, answers
    assert d.execute_script("return window.__xss") is None
    assert not d.find_elements(By.CSS_SELECTOR, "dl.answers script, dl.answers img:not(.photo)"), "markup from an answer made elements"

    # The same text in a review comment is text too.
    srv.review(rid, "startReview", 1)
    srv.review(rid, "returnForCorrection", 2, comment=XSS)
    open_response(d, srv, rid)
    assert [b.text for b in d.find_elements(By.CSS_SELECTOR, ".history blockquote")] == [XSS]
    assert d.execute_script("return window.__xss") is None


def test_forms_without_csrf_token_or_from_another_origin_are_refused():
    srv = shared_server()
    rid = srv.submit()
    d = browser()
    sign_in_token(d, srv, srv["REVIEWER"])
    open_response(d, srv, rid)
    session = d.get_cookie("surveyd_session")["value"]
    csrf = d.find_element(By.CSS_SELECTOR, "form[action$='/review'] input[name=csrf]").get_attribute("value")
    assert csrf
    path = f"/console/orgs/{srv['ORG']}/responses/{rid}/review"
    cookie = "surveyd_session=" + session
    same_origin = {"Origin": srv.base}

    # No csrf field (with and without this console's Origin), a wrong one, then a foreign Origin.
    status, hdrs, body = post_form(srv, path, {"action": "startReview", "expectedRevision": "1"}, cookie)
    assert status == 403 and hdrs.get("content-type", "").startswith("text/html") and "<html" in body, (status, hdrs, body[:300])
    status, hdrs, body = post_form(srv, path, {"action": "startReview", "expectedRevision": "1"}, cookie, same_origin)
    assert status == 403 and hdrs.get("content-type", "").startswith("text/html") and "<html" in body, (status, hdrs, body[:300])
    status, hdrs, body = post_form(srv, path, {"action": "startReview", "expectedRevision": "1", "csrf": "x" + csrf[1:]}, cookie)
    assert status == 403 and hdrs.get("content-type", "").startswith("text/html"), (status, body[:300])
    status, hdrs, body = post_form(srv, path, {"action": "startReview", "expectedRevision": "1", "csrf": csrf}, cookie,
                                   {"Origin": "http://evil.example"})
    assert status == 403 and hdrs.get("content-type", "").startswith("text/html") and "<html" in body, (status, hdrs, body[:300])
    bulk = f"/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}/bulk"
    status, _, _ = post_form(srv, bulk, {"action": "startReview", "item": f"{rid}:1"}, cookie)
    assert status == 403, status
    status, _, _ = post_form(srv, "/console/sign-out", {}, cookie)
    assert status == 403, status

    assert srv.state(rid) == ("submitted", 1), srv.state(rid)
    assert len(srv.history(rid)) == 1, f"a refused form left a history entry: {srv.history(rid)}"

    # The same request with the token from the same origin goes through: the refusals above were
    # about the token and the origin, nothing else.
    status, hdrs, _ = post_form(srv, path, {"action": "startReview", "expectedRevision": "1", "csrf": csrf}, cookie, same_origin)
    assert status == 303, status
    assert srv.state(rid) == ("in_review", 2), srv.state(rid)
    d.get(srv.base + "/console/")
    assert path_of(d) == "/console/", "the session ended"


def test_deactivation_ends_the_session():
    srv = shared_server()
    rid = srv.submit()
    d = browser()
    user, email, password = invited_user(d, srv, "Dora Reviewer", ["reviewer"])
    sign_in_password(d, srv, email, password)
    assert path_of(d) == "/console/", f"{d.current_url}: {problem_text(d)}"
    open_response(d, srv, rid)

    srv.api("DELETE", f"/users/{user['userId']}", srv["ADMIN"])
    status, _, _ = srv.request("GET", f"/v1/orgs/{srv['ORG']}/responses/{rid}", user["token"])
    assert status == 401, f"the deactivated user's token still answers {status}"

    d.refresh()
    wait_loaded(d)
    assert path_of(d) == "/console/sign-in", f"after deactivation the response page showed {d.current_url}"
    assert rid not in page_text(d)
    d.get(srv.base + "/console/")
    assert path_of(d) == "/console/sign-in", d.current_url
    # Nor can they sign in again.
    sign_in_password(d, srv, email, password)
    assert path_of(d) == "/console/sign-in" and problem_text(d), d.current_url


TESTS = [
    test_invitation_password_and_token_sign_in,
    test_review_chain_clicked_through,
    test_stale_page_changes_nothing,
    test_answers_edited_on_the_response_page,
    test_bulk_start_review_and_approve,
    test_queue_filters_by_version_submitter_task_and_date,
    test_expired_subscription_banner_and_disabled_buttons,
    test_answers_are_shown_as_text,
    test_forms_without_csrf_token_or_from_another_origin_are_refused,
    test_deactivation_ends_the_session,
]


def keep_artifacts(name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    for i, d in enumerate(_drivers):
        try:
            d.save_screenshot(os.path.join(ARTIFACTS, f"{name}-{i}.png"))
            with open(os.path.join(ARTIFACTS, f"{name}-{i}.html"), "w") as f:
                f.write(f"<!-- {d.current_url} -->\n" + d.page_source)
        except Exception:
            pass


def run_tests(tests, argv, title, finish=()):
    """Runs `tests` (only those whose name contains WORD with `-k WORD`), each with fresh
    browsers, keeping a failure's screenshots and HTML; then calls each of `finish`. Prints
    "N passed, N failed" last; the exit status is 1 when any test failed."""
    selected = tests
    if "-k" in argv:
        word = argv[argv.index("-k") + 1]
        selected = [t for t in tests if word in t.__name__]
    passed, failed = [], []
    started = time.time()
    try:
        for test in selected:
            t0 = time.time()
            try:
                test()
                passed.append(test.__name__)
                print(f"PASS {test.__name__} ({time.time() - t0:.1f} s)", flush=True)
            except Exception:
                failed.append(test.__name__)
                print(f"FAIL {test.__name__} ({time.time() - t0:.1f} s)", flush=True)
                traceback.print_exc()
                keep_artifacts(test.__name__)
                print(f"     (screenshots and HTML in {os.path.relpath(ARTIFACTS, ROOT)}/{test.__name__}-*)", flush=True)
            finally:
                quit_browsers()
    finally:
        for step in finish:
            step()
    print(f"{title}: {time.time() - started:.1f} s")
    print(f"{len(passed)} passed, {len(failed)} failed")
    return 1 if failed or not selected else 0


def stop_shared_server():
    if _shared is not None:
        _shared.stop()


def main(argv):
    return run_tests(TESTS, argv, "browser tests", finish=[stop_shared_server])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
