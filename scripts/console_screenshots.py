#!/usr/bin/env python3
"""Regenerates the console's screenshots in Docs/console/ from a real demo server.

    scripts/browser_tests.sh --screenshots      # installs what is missing, then runs this

Writes PAGE-{desktop,phone}.png for the reviewer's pages (sign-in, queue, response,
response-roster), the admin's (users, user, surveys, survey, survey-roster, survey-xlsform-refused,
survey-xlsform-warnings, tasks, exports, webhooks, webhook, subscription) and the operator's (orgs): desktop is a 1280x900 viewport, phone
a 375x812 one (a mobile viewport at device pixel ratio 2); each is the whole page, not just the
first screen. The response shown has a location, a photo and a review comment in its history
(returned for correction, resubmitted, in review again); the roster's response and survey pages
show Tests/Browser/test_console_forms.py's household roster (a group, members with their clinic
visits, two languages); the user page shows a new app token with its QR code and, for the collector, ODK
Collect's settings QR code; the survey page two
versions; survey-xlsform-warnings the page right after publishing an XLSForm pyxform warns about
(Tests/SurveyXFormTests/Fixtures/warnings.xlsx, over an XForm version); the tasks page open and completed tasks; the operator's page three organizations, one
of them expired. For each phone page it also prints any element wider than the screen, so a
horizontal overflow is seen without opening the file.

Needs Selenium (the venv scripts/browser_tests.sh makes) and SURVEYD_BIN (default
.build/debug/surveyd).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Browser"))

from test_console import DESKTOP, PHONE, ROOT, By, Server, browser, click_and_load, quit_browsers, set_viewport, sign_in_token, wait_loaded  # noqa: E402
from test_console_admin import Receiver, button, demo_user_id, new_survey, submission, submit_raw  # noqa: E402
from test_console_forms import CONSENTED, publish_roster, sync  # noqa: E402

OUT = os.path.join(ROOT, "Docs", "console")

OVERFLOW_JS = """
const w = document.documentElement.clientWidth, wide = [];
for (const e of document.querySelectorAll('body *')) {
  const r = e.getBoundingClientRect();
  if (r.width > 0 && (r.right > w + 1 || r.left < -1)) {
    wide.push(e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).replace(/ /g, '.') : '') + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
}
return [document.documentElement.scrollWidth, w, wide.slice(0, 12)];
"""


def seed(srv):
    """The response the response page shows, and a queue with a few states in it."""
    answers = {"household_size": 6, "water_source": "borehole",
               "notes": "Borehole shared with the school next door.\nThe pump handle is loose; water is clear."}
    rid = srv.submit(answers=dict(answers), csid="kisumu-0042", photo=True, location=True)
    srv.review(rid, "startReview", 1)
    srv.review(rid, "returnForCorrection", 2, comment="Household size looks high for one room. Please recount and add a photo of the pump.")
    fixed = dict(srv.response(rid)["answers"], household_size=5)
    srv.resubmit(rid, 3, fixed)
    srv.review(rid, "startReview", 4)

    others = [("kisumu-0043", 3, "well"), ("kisumu-0044", 8, "piped"), ("kisumu-0045", 2, "river"),
              ("kisumu-0046", 4, "rain"), ("kisumu-0047", 5, "vendor")]
    ids = [srv.submit(answers={"household_size": n, "water_source": src}, csid=csid) for csid, n, src in others]
    srv.review(ids[0], "startReview", 1)
    srv.review(ids[0], "approve", 2)
    srv.review(ids[1], "startReview", 1)
    srv.review(ids[1], "returnForCorrection", 2, comment="The GPS point is missing.")
    return rid


def seed_admin(srv):
    """What the admin's and the operator's pages show: more users, a second version of the demo
    survey and two more surveys, open and completed tasks, two more organizations (one expired)."""
    for name, roles, email in (("Grace Mwangi", ["collector"], "grace.mwangi@example.org"),
                               ("Samuel Otieno", ["collector", "reviewer"], "samuel.otieno@example.org"),
                               ("Wanjiru Kamau", ["admin", "reviewer"], "wanjiru.kamau@example.org"),
                               ("Peter Ouma", ["collector"], None)):
        user = srv.create_user(name, roles)
        if email:
            srv.invite(user["userId"], email)
        if name == "Peter Ouma":
            srv.api("DELETE", f"/users/{user['userId']}", srv["ADMIN"])

    sid = srv.survey_id()
    definition = srv.api("GET", f"/survey-versions/{srv['VERSION']}", srv["ADMIN"])["definition"]
    definition["questions"].insert(2, {"id": "treatment", "type": "select_multiple", "label": "How the water is treated",
                                       "choices": ["boiling", "chlorine", "filter", "none"]})
    srv.api("POST", f"/surveys/{sid}/versions", srv["ADMIN"], {"definition": definition}, expect=(201,))
    latrine, version = new_survey(srv, "Latrine check", review=False)
    srv.api("POST", "/surveys", srv["ADMIN"], {"title": "School sanitation (draft)", "reviewRequired": True}, expect=(201,))

    cole = demo_user_id(srv, "Cole Collector")
    grace = demo_user_id(srv, "Grace Mwangi")
    done = srv.api("POST", "/tasks", srv["ADMIN"], {"title": "Latrines of block 2", "surveyId": latrine, "assigneeUserId": cole,
                                                     "dueAt": "2026-12-10T23:59:59Z"}, expect=(201,))
    status, _, out = submit_raw(srv, submission(version["surveyVersionId"], version["contentHash"],
                                                {"household_size": 5, "water_source": "well"}, done["taskId"]))
    assert status == 201, (status, out)
    for title, survey, who, due, notes in (("Households along the river road", sid, cole, "2026-12-15T23:59:59Z", "Start at the school."),
                                           ("Kisumu market stalls", sid, grace, "2026-12-20T23:59:59Z", None),
                                           ("Re-visit block 4 (missing photos)", sid, grace, None, "Ask for the pump photo.")):
        body = {"title": title, "surveyId": survey, "assigneeUserId": who}
        if due:
            body["dueAt"] = due
        if notes:
            body["notes"] = notes
        srv.api("POST", "/tasks", srv["ADMIN"], body, expect=(201,))

    for name, expires in (("Lakeside Health Volunteers", "2027-06-30T23:59:59Z"), ("Coastal Schools Pilot", "2026-01-31T23:59:59Z")):
        status, _, org = srv.request("POST", "/v1/orgs", srv["OP"], {"name": name, "expiresAt": expires})
        assert status == 201, (status, org)
        status, _, _ = srv.request("POST", f"/v1/orgs/{org['orgId']}/users", srv["OP"], {"name": "First Admin", "roles": ["admin"]})
        assert status == 201, status

    # Webhooks: one receiver on loopback that answers (its deliveries succeed), one whose host
    # does not resolve here (its first delivery waits for a retry, with the reason).
    receiver = Receiver()
    hook = srv.api("POST", "/webhooks", srv["ADMIN"], {"url": receiver.url, "events": ["response.accepted", "response.review"],
                                                       "description": "Case management system"}, expect=(201,))
    srv.api("POST", "/webhooks", srv["ADMIN"], {"url": "https://warehouse.example.org/surveyd/events", "events": ["response.accepted"],
                                                "description": "Data warehouse"}, expect=(201,))
    for i, (size, source) in enumerate(((4, "well"), (6, "piped"), (2, "river"))):
        status, _, out = submit_raw(srv, submission(srv["VERSION"], srv["HASH"], {"household_size": size, "water_source": source}))
        assert status == 201, (status, out)
        if i == 0:
            srv.review(out["responseId"], "startReview", 1)
    receiver.wait(4)
    return sid, cole, hook["webhookId"]


def seed_warned(srv):
    """A survey whose version 1 is an XForm and version 2 an XLSForm pyxform converts with
    warnings, both published through the API: its surveyId."""
    sid = srv.api("POST", "/surveys", srv["ADMIN"], {"title": "Home visit", "reviewRequired": False}, expect=(201,))["surveyId"]
    fixtures = os.path.join(ROOT, "Tests", "SurveyXFormTests", "Fixtures")
    for name, content_type in (("simple.xml", "application/xml"),
                               ("warnings.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")):
        with open(os.path.join(fixtures, name), "rb") as f:
            srv.api("POST", f"/surveys/{sid}/versions", srv["ADMIN"], data=f.read(), headers={"Content-Type": content_type}, expect=(201,))
    return sid


def shoot(d, size, mobile, scale, name):
    """The whole page at this width, into Docs/console/NAME.png."""
    set_viewport(d, size, mobile, scale)
    wait_loaded(d)
    height = max(size[1], d.execute_script("return document.documentElement.scrollHeight"))
    scroll_width, width, wide = d.execute_script(OVERFLOW_JS)
    set_viewport(d, (size[0], height), mobile, scale)
    path = os.path.join(OUT, name + ".png")
    d.save_screenshot(path)
    set_viewport(d, size, mobile, scale)
    note = "" if scroll_width <= width else f"  HORIZONTAL OVERFLOW: page is {scroll_width} px wide on a {width} px screen; widest: {wide}"
    print(f"{os.path.relpath(path, ROOT)}  ({size[0]}x{height} CSS px){note}")


def main():
    os.makedirs(OUT, exist_ok=True)
    srv = Server()
    try:
        rid = seed(srv)
        # Before the webhooks exist: the roster's response is no delivery on the webhook page.
        roster_sid, roster_version = publish_roster(srv)
        roster_rid = sync(srv, roster_version, CONSENTED, csid="kisumu-roster-0007")
        sid, cole, webhook = seed_admin(srv)
        warned_sid = seed_warned(srv)
        org = f"{srv.base}/console/orgs/{srv['ORG']}"
        pages = {"queue": f"{org}/surveys/{sid}/responses",
                 "response": f"{org}/responses/{rid}", "response-roster": f"{org}/responses/{roster_rid}"}
        admin_pages = {"users": f"{org}/users", "surveys": f"{org}/surveys", "survey": f"{org}/surveys/{sid}",
                       "survey-roster": f"{org}/surveys/{roster_sid}",
                       "tasks": f"{org}/tasks", "exports": f"{org}/surveys/{sid}/exports", "subscription": f"{org}/subscription",
                       "webhooks": f"{org}/webhooks", "webhook": f"{org}/webhooks/{webhook}"}
        for kind, size, mobile, scale in (("desktop", DESKTOP, False, 1), ("phone", PHONE, True, 2)):
            d = browser(size, mobile, scale)
            d.get(srv.base + "/console/sign-in")
            shoot(d, size, mobile, scale, f"sign-in-{kind}")
            sign_in_token(d, srv, srv["REVIEWER"])
            d.get(pages["queue"])
            assert d.find_elements(By.CSS_SELECTOR, "table.queue tbody tr"), "the queue is empty"
            shoot(d, size, mobile, scale, f"queue-{kind}")
            d.get(pages["response"])
            assert d.find_elements(By.CSS_SELECTOR, ".history blockquote") and d.find_elements(By.CSS_SELECTOR, "img.photo")
            shoot(d, size, mobile, scale, f"response-{kind}")
            d.get(pages["response-roster"])
            assert d.find_elements(By.CSS_SELECTOR, "section.instance section.instance"), "the roster shows no nested instance"
            shoot(d, size, mobile, scale, f"response-roster-{kind}")
            d.delete_all_cookies()

            sign_in_token(d, srv, srv["ADMIN"])
            for name, url in admin_pages.items():
                d.get(url)
                assert d.find_element(By.TAG_NAME, "h1").text != "Not found", url
                shoot(d, size, mobile, scale, f"{name}-{kind}")
            # An XLSForm pyxform refuses, shown on the survey page with the row it names.
            d.get(admin_pages["survey-roster"])
            d.find_element(By.ID, "definition").send_keys(os.path.join(ROOT, "Tests", "SurveyXFormTests", "Fixtures", "missing_list.xlsx"))
            click_and_load(d, button(d, "Publish version"))
            assert d.find_elements(By.CSS_SELECTOR, ".problem li"), "the refused XLSForm shows no reason"
            shoot(d, size, mobile, scale, f"survey-xlsform-refused-{kind}")
            # The page after publishing an XLSForm pyxform warns about: the warnings with the version.
            d.get(f"{org}/surveys/{warned_sid}?published=2")
            assert len(d.find_elements(By.CSS_SELECTOR, ".warnings li")) == 4, "the warnings are not shown"
            shoot(d, size, mobile, scale, f"survey-xlsform-warnings-{kind}")
            # The user page as it is right after "New app token": the token and its QR code.
            d.get(f"{org}/users/{cole}")
            click_and_load(d, button(d, "New app token (shown once, with a QR code)"))
            assert d.find_elements(By.CSS_SELECTOR, "section.secret svg.qr"), "no QR code on the user page"
            shoot(d, size, mobile, scale, f"user-{kind}")
            d.delete_all_cookies()

            sign_in_token(d, srv, srv["OP"])
            d.get(srv.base + "/console/operator/orgs")
            assert len(d.find_elements(By.CSS_SELECTOR, "table tbody tr")) == 3
            shoot(d, size, mobile, scale, f"orgs-{kind}")
            quit_browsers()
    finally:
        quit_browsers()
        srv.stop()


if __name__ == "__main__":
    main()
