#!/usr/bin/env python3
"""Times the console's Map view of surveys of different sizes in headless Chromium, on a running
surveyd, signed in with each survey's admin token; and the server's time to serve the map's clusters.

  .build/venv-browser/bin/python Benchmarks/map_pages.py --port P --rounds 5 \
      --survey N:ORG:TOKEN:SURVEY [--survey N:ORG:TOKEN:SURVEY ...]

For each survey (N located responses): the clusters URL the page names (read from its
`data-clusters`), asked as the page first asks it (the whole world at zoom 0, with the lines),
ROUNDS + 1 times over HTTP with the sign-in cookie: the first answer reads the located responses
from the database (`Surveyd-Map-Points: read`), the others cluster the list the server kept
(`kept`); each answer's `total` and the sum of its counts must be N. Then one view's clusters
(zoom 10 in the points' box), ROUNDS times. Then the Map view opened in a headless Chromium of its
own (Tests/Browser's helpers; one per survey, so no sign-in falls inside a round), one round of
each survey in turn, after one unmeasured round each, twice: with the points kept by the server
(the same URL each round), and with them read from the database each round (a `receivedFrom` of
1970 that selects every response, a second later each round, so the server keeps no list for it).

A round is a navigation from about:blank to the Map view. "Loaded" is when the page is drawn with
every point: a script put before the page's own (CDP Page.addScriptToEvaluateOnNewDocument) checks
at every animation frame that `#map` carries `data-markers` equal to N, that the marker pane's
icons add up to N (a cluster by the count it shows, a single marker by one; the fitted view holds
every point), and that no zoom animation runs; its `performance.now()` then (ms from the
navigation's start) is the round's time. Per round also: the clusters requests in the page's
resource timing (the first's start, the last's end, bytes), the page's own `performance.mark`s
(map-bounds-parsed: the world's answer read; map-clusters-drawn: the fitted view drawn), and the JS
heap after a garbage collection (CDP Runtime.getHeapUsage).

One line per survey and kind of round: "n=N map (kept|read): median_ms=… min_ms=… max_ms=… rounds=R"
and the medians of the parts, then the largest survey's median over the smallest's."""
import argparse, html, http.client, json, os, re, statistics, sys, time, urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Browser"))

# Runs before the page's scripts, at every frame until the map shows all its points.
WATCH = r"""
(function () {
  function check() {
    var el = document.getElementById("map");
    var want = el && el.getAttribute("data-markers");
    if (el && el.getAttribute("data-error")) { window.__mapLoaded = { error: el.getAttribute("data-error") }; return; }
    if (want !== null && want !== undefined && !document.querySelector(".leaflet-cluster-anim, .leaflet-zoom-anim")) {
      var icons = el.querySelectorAll(".leaflet-marker-pane .leaflet-marker-icon"), sum = 0, clusters = 0;
      for (var i = 0; i < icons.length; i++) {
        if (icons[i].classList.contains("marker-cluster")) { sum += parseInt(icons[i].textContent, 10) || 0; clusters++; }
        else { sum += 1; }
      }
      if (sum > 0 && sum === parseInt(want, 10)) {
        window.__mapLoaded = { t: performance.now(), markers: sum, clusters: clusters, icons: icons.length,
                               total: parseInt(el.getAttribute("data-total"), 10) };
        return;
      }
    }
    requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
})();
"""

PARTS = """
var rs = performance.getEntriesByType("resource").filter(function (e) { return e.name.indexOf("/clusters.json?") >= 0; });
var first = rs[0], last = rs[rs.length - 1];
var nav = performance.getEntriesByType("navigation")[0];
var mark = function (n) { var m = performance.getEntriesByName(n); return m.length ? m[0].startTime : null; };
return { loaded: window.__mapLoaded, requests: rs.length,
         dcl: nav ? nav.domContentLoadedEventEnd : null, load: nav ? nav.loadEventEnd : null,
         worldStart: first ? first.startTime : null, worldEnd: first ? first.responseEnd : null,
         viewEnd: last ? last.responseEnd : null,
         bytes: rs.reduce(function (a, e) { return a + e.encodedBodySize; }, 0),
         parsed: mark("map-bounds-parsed"), drawn: mark("map-clusters-drawn") };
"""


class Server:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.port = port


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, unit=""):
    return "-" if x is None else f"{x:.0f}{unit}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--survey", action="append", required=True, help="N:ORG:TOKEN:SURVEY")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    from selenium.webdriver.support.ui import WebDriverWait
    from test_console import DESKTOP, browser, quit_browsers, sign_in_token, wait_loaded

    srv = Server(a.port)
    surveys = []
    for s in a.survey:
        n, org, token, sid = s.split(":", 3)
        surveys.append({"n": int(n), "org": org, "token": token, "sid": sid,
                        "url": f"{srv.base}/console/orgs/{org}/surveys/{sid}/map"})
    surveys.sort(key=lambda s: s["n"])

    # The server alone: the clusters URL the page names, asked as the page asks it.
    for s in surveys:
        conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
        conn.request("POST", "/console/sign-in", body=urllib.parse.urlencode({"token": s["token"], "next": "/console/"}),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        r = conn.getresponse()
        r.read()
        cookie = (r.getheader("Set-Cookie") or "").split(";")[0]
        if r.status != 303 or not cookie:
            sys.exit(f"map_pages: signing in answered {r.status}")
        conn.request("GET", s["url"][len(srv.base):], headers={"Cookie": cookie})
        r = conn.getresponse()
        page = r.read().decode()
        m = re.search(r'data-clusters="([^"]+)"', page)
        if r.status != 200 or not m:
            sys.exit(f"map_pages: the map page answered {r.status} without a clusters URL")
        s["clusters"] = html.unescape(m.group(1))

        def ask(query):
            t = time.monotonic()
            conn.request("GET", s["clusters"] + "&" + query, headers={"Cookie": cookie, "Accept": "application/json"})
            r = conn.getresponse()
            body = r.read()
            ms = (time.monotonic() - t) * 1000
            if r.status != 200:
                sys.exit(f"map_pages: the clusters answered {r.status}: {body[:200]}")
            doc = json.loads(body)
            counted = sum(c[2] for c in doc["clusters"]) + len(doc["points"])
            return ms, len(body), doc, counted, r.getheader("Surveyd-Map-Points")

        world = "zoom=0&bbox=-180,-90,180,90&lines=true"
        read_ms, size, doc, counted, how = ask(world)
        if how != "read" or doc["total"] != s["n"] or counted != s["n"]:
            sys.exit(f"map_pages: the first answer was {how} with total {doc['total']} and counts {counted}, not read and {s['n']}")
        kept = []
        for _ in range(a.rounds):
            ms, size, doc, counted, how = ask(world)
            if how != "kept" or doc["total"] != s["n"] or counted != s["n"]:
                sys.exit(f"map_pages: a later answer was {how} with total {doc['total']} and counts {counted}")
            kept.append(ms)
        south, west, north, east = doc["bounds"]
        lat, lon = (south + north) / 2, (west + east) / 2
        view = f"zoom=10&bbox={lon - 0.9},{lat - 0.6},{lon + 0.9},{lat + 0.6}"  # about 1280 × 900 px at zoom 10
        views = []
        for _ in range(a.rounds):
            ms, vsize, vdoc, vcounted, how = ask(view)
            views.append(ms)
        print(f"n={s['n']} clusters served: world first (read from the database) ms={read_ms:.0f}; world kept: median_ms={med(kept):.0f} "
              f"min_ms={min(kept):.0f} max_ms={max(kept):.0f} bytes={size}; a view at zoom 10: median_ms={med(views):.0f} "
              f"bytes={vsize} clusters={len(vdoc['clusters'])} points={len(vdoc['points'])} in_view={vcounted} total={doc['total']}", flush=True)
        conn.close()

    # The browser: one Chromium per survey, signed in once; rounds in turn.
    for s in surveys:
        d = browser(DESKTOP)
        d.set_page_load_timeout(a.timeout)
        sign_in_token(d, srv, s["token"])
        d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        d.execute_cdp_cmd("HeapProfiler.enable", {})
        s["driver"], s["rounds"] = d, []

    def one_round(s, url):
        d = s["driver"]
        d.get("about:blank")
        d.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        d.get(url)
        WebDriverWait(d, a.timeout, poll_frequency=0.05).until(lambda d: d.execute_script("return window.__mapLoaded || null"))
        parts = d.execute_script(PARTS)
        if "error" in parts["loaded"]:
            sys.exit(f"map_pages: the map failed: {parts['loaded']['error']}")
        if parts["loaded"]["markers"] != s["n"] or parts["loaded"]["total"] != s["n"]:
            sys.exit(f"map_pages: the map shows {parts['loaded']['markers']} points of {parts['loaded']['total']}, not {s['n']}")
        d.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        heap = d.execute_cdp_cmd("Runtime.getHeapUsage", {})
        parts["heap_mb"] = heap["usedSize"] / 1e6
        return parts

    # "read": a filter that selects every response, spelled differently each round, so the server
    # has no list kept for it and reads the located responses from the database.
    fresh = [0]

    def read_url(s):
        fresh[0] += 1
        return s["url"] + f"?receivedFrom=1970-01-01T00:{fresh[0] // 60:02d}:{fresh[0] % 60:02d}"

    kinds = {"kept": lambda s: s["url"], "read": read_url}
    for s in surveys:  # warm: the scripts in the cache, the server's list kept
        one_round(s, s["url"])
    medians = {}
    for kind, url in kinds.items():
        for s in surveys:
            s["rounds"] = []
        for _ in range(a.rounds):
            for s in surveys:
                s["rounds"].append(one_round(s, url(s)))
                r = s["rounds"][-1]
                print(f"  n={s['n']} {kind} round {len(s['rounds'])}: loaded_ms={r['loaded']['t']:.0f} world_end_ms={fmt(r['worldEnd'])} "
                      f"drawn_ms={fmt(r['drawn'])} icons={r['loaded']['icons']} requests={r['requests']} heap_mb={r['heap_mb']:.0f}", flush=True)
        for s in surveys:
            rs = s["rounds"]
            t = [r["loaded"]["t"] for r in rs]
            medians[(kind, s["n"])] = statistics.median(t)
            part = lambda k: med([r[k] for r in rs])  # noqa: E731
            fetch = med([r["worldEnd"] - r["worldStart"] for r in rs if r["worldEnd"] is not None])
            print(f"n={s['n']} map ({kind}): median_ms={statistics.median(t):.0f} min_ms={min(t):.0f} max_ms={max(t):.0f} rounds={len(rs)} "
                  f"dom_content_loaded_ms={fmt(part('dcl'))} world_start_ms={fmt(part('worldStart'))} world_end_ms={fmt(part('worldEnd'))} "
                  f"world_fetch_ms={fmt(fetch)} bounds_parsed_ms={fmt(part('parsed'))} view_end_ms={fmt(part('viewEnd'))} "
                  f"clusters_drawn_ms={fmt(part('drawn'))} bytes={fmt(part('bytes'))} clusters_shown={rs[-1]['loaded']['clusters']} "
                  f"icons={rs[-1]['loaded']['icons']} heap_mb={med([r['heap_mb'] for r in rs]):.0f}", flush=True)
    lo, hi = surveys[0]["n"], surveys[-1]["n"]
    if hi != lo:
        for kind in kinds:
            big = medians[(kind, hi)]
            print(f"map ({kind}) n={hi} / n={lo}: {big / medians[(kind, lo)]:.2f}x the time for {hi / lo:.0f}x the points "
                  f"(target: n=100000 < 3000 ms: {'met' if medians.get((kind, 100000), 1e9) < 3000 else 'not met'})", flush=True)
    quit_browsers()


if __name__ == "__main__":
    main()
