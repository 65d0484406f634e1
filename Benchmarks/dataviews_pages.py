#!/usr/bin/env python3
"""Times the console's Data and Summary views of one survey on a running surveyd, signed in with
an admin's API token, and samples the server's RSS while the summary is counted.

  dataviews_pages.py --port P --token T --org ORG --survey SRV --db DATA/surveyd.sqlite --pid PID
                     [--rounds 7] [--summary-rounds 3] [--sizes 50,250]

Data: for each page size, the first page, the middle one and the last one, each opened ROUNDS
times (a page after the first is the `before=<responseId>` its predecessor links to; the ids are
read from the database, read-only, and the page must show the expected newest row and count).
Summary: opened SUMMARY_ROUNDS times, the server's VmRSS read every 20 ms meanwhile.
One line per page: "name: median_ms=… min_ms=… max_ms=…" and what it showed."""
import argparse, http.client, re, sqlite3, statistics, sys, threading, time, urllib.parse


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("--token", "--org", "--survey", "--db"):
        p.add_argument(name, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--summary-rounds", type=int, default=3)
    p.add_argument("--sizes", default="50,250")
    a = p.parse_args()
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=900)

    def get(method: str, path: str, body: str | None = None, cookie: str | None = None):
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
        if cookie:
            headers["Cookie"] = cookie
        t = time.monotonic()
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        return r, data, (time.monotonic() - t) * 1000

    r, _, _ = get("POST", "/console/sign-in", urllib.parse.urlencode({"token": a.token, "next": "/console/"}))
    set_cookie = r.getheader("Set-Cookie")
    if r.status != 303 or not set_cookie:
        sys.exit(f"dataviews_pages: signing in answered {r.status}")
    cookie = set_cookie.split(";")[0]

    def timed(name: str, path: str, rounds: int, check=None) -> None:
        times = []
        for _ in range(rounds):
            r, data, ms = get("GET", path, cookie=cookie)
            if r.status != 200:
                sys.exit(f"dataviews_pages: {path} answered {r.status}")
            times.append(ms)
        shown = check(data.decode()) if check else ""
        print(f"{name}: median_ms={statistics.median(times):.1f} min_ms={min(times):.1f} max_ms={max(times):.1f} "
              f"kb={len(data) // 1024} {shown}", flush=True)

    db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    n = db.execute("SELECT COUNT(*) FROM responses WHERE org_id = ? AND survey_id = ?", (a.org, a.survey)).fetchone()[0]
    print(f"responses: {n}", flush=True)

    def nth_newest(k: int) -> str:
        return db.execute("SELECT response_id FROM responses WHERE org_id = ? AND survey_id = ? ORDER BY response_id DESC LIMIT 1 OFFSET ?",
                          (a.org, a.survey, k)).fetchone()[0]

    base = f"/console/orgs/{a.org}/surveys/{a.survey}"
    get("GET", base + "/data", cookie=cookie)  # warm
    for size in map(int, a.sizes.split(",")):
        pages = (n + size - 1) // size
        for label, k in (("first", 0), ("middle", pages // 2), ("last", pages - 1)):
            path = f"{base}/data?size={size}" + ("" if k == 0 else f"&before={nth_newest(k * size - 1)}")
            expect_first, expect_rows = nth_newest(k * size), min(size, n - k * size)

            def check(html: str, expect_first=expect_first, expect_rows=expect_rows) -> str:
                m = re.search(r"(\d+) responses? on this page", html)
                rows = int(m.group(1)) if m else -1
                if rows != expect_rows or expect_first not in html:
                    sys.exit(f"dataviews_pages: page shows {rows} rows (expected {expect_rows}) or lacks {expect_first}")
                return f"rows={rows}"
            timed(f"data size={size} {label} (page {k + 1} of {pages})", path, a.rounds, check)

    def rss() -> int:
        with open(f"/proc/{a.pid}/status") as f:
            return int(next(line for line in f if line.startswith("VmRSS")).split()[1])

    idle = rss()
    peak = [idle]
    running = [True]

    def sampler() -> None:
        while running[0]:
            peak[0] = max(peak[0], rss())
            time.sleep(0.02)
    t = threading.Thread(target=sampler)
    t.start()
    try:
        timed("summary", base + "/summary", a.summary_rounds,
              lambda html: "answered=" + "|".join(re.findall(r"Answered <strong>(\d+)<", html)[:3]))
    finally:
        running[0] = False
        t.join()
    print(f"summary rss: idle_kb={idle} peak_kb={peak[0]} after_kb={rss()}", flush=True)


if __name__ == "__main__":
    main()
