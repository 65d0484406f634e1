#!/usr/bin/env python3
"""Times the review desk's pages on a running surveyd: signs in with an API token, then GETs each
page ROUNDS times and prints one line per page: its name, the median and fastest time in ms, and
the counts the page showed (the `count`/`counts` spans), so a reader sees what was counted.

  console_pages.py --port P --token T --org ORG --survey SRV [--rounds 7] [--screenshots DIR --name NAME]

Pages: home (every survey with how many wait for review), the survey's queue (all states), its
`submitted` tab and its `approved` tab. Every answer must be a 200. With --screenshots, the home
page and the queue are then opened in headless Chromium (Tests/Browser's helpers; Selenium from
the venv scripts/browser_tests.sh makes) and saved as DIR/home-NAME-desktop.png and
DIR/queue-NAME-desktop.png."""
import argparse, http.client, os, re, statistics, sys, time, urllib.parse


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--org", required=True)
    p.add_argument("--survey", required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--screenshots")
    p.add_argument("--name", default="large")
    a = p.parse_args()

    def get(method: str, path: str, body: str | None = None, cookie: str | None = None):
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
        if cookie:
            headers["Cookie"] = cookie
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r, r.read()

    r, _ = get("POST", "/console/sign-in", urllib.parse.urlencode({"token": a.token, "next": "/console/"}))
    session = r.getheader("Set-Cookie")
    if r.status != 303 or not session:
        sys.exit(f"console_pages: signing in answered {r.status}")
    cookie = session.split(";")[0]
    queue = f"/console/orgs/{a.org}/surveys/{a.survey}/responses"
    for name, path in [("home", "/console/"), ("queue", queue), ("queue submitted", queue + "?state=submitted"),
                       ("queue approved", queue + "?state=approved")]:
        times = []
        for _ in range(a.rounds):
            t = time.monotonic()
            r, data = get("GET", path, cookie=cookie)
            times.append(time.monotonic() - t)
            if r.status != 200:
                sys.exit(f"console_pages: {path} answered {r.status}")
        counts = re.findall(r'class="counts?">([^<]*)<', data.decode())
        print(f"{name}: median_ms={statistics.median(times) * 1000:.1f} min_ms={min(times) * 1000:.1f} counts={'|'.join(counts)}")
    if a.screenshots:
        screenshots(a, cookie, queue)


def screenshots(a, cookie: str, queue: str) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Browser"))
    from test_console import DESKTOP, browser, quit_browsers, wait_loaded
    os.makedirs(a.screenshots, exist_ok=True)
    base = f"http://127.0.0.1:{a.port}"
    d = browser(DESKTOP)
    try:
        d.get(base + "/console/sign-in")  # the cookie can only be set on a page of its site
        name, value = cookie.split("=", 1)
        d.add_cookie({"name": name, "value": value, "path": "/"})
        for page, path in [("home", "/console/"), ("queue", queue + "?state=submitted")]:
            d.get(base + path)
            wait_loaded(d)
            d.save_screenshot(os.path.join(a.screenshots, f"{page}-{a.name}-desktop.png"))
    finally:
        quit_browsers()


if __name__ == "__main__":
    main()
