#!/usr/bin/env python3
"""Regenerates the console's screenshots in Docs/console/ from a real demo server.

    scripts/browser_tests.sh --screenshots      # installs what is missing, then runs this

Writes sign-in-, queue- and response-{desktop,phone}.png: desktop is a 1280x900 viewport, phone
a 375x812 one (a mobile viewport at device pixel ratio 2); each is the whole page, not just the
first screen. The response shown has a location, a photo and a review comment in its history
(returned for correction, resubmitted, in review again). For each phone page it also prints any
element wider than the screen, so a horizontal overflow is seen without opening the file.

Needs Selenium (the venv scripts/browser_tests.sh makes) and SURVEYD_BIN (default
.build/debug/surveyd).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Browser"))

from test_console import DESKTOP, PHONE, ROOT, By, Server, browser, quit_browsers, set_viewport, sign_in_token, wait_loaded  # noqa: E402

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
        pages = {"queue": f"{srv.base}/console/orgs/{srv['ORG']}/surveys/{srv.survey_id()}/responses",
                 "response": f"{srv.base}/console/orgs/{srv['ORG']}/responses/{rid}"}
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
    finally:
        quit_browsers()
        srv.stop()


if __name__ == "__main__":
    main()
