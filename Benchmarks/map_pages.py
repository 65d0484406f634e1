#!/usr/bin/env python3
"""Times the console's Map view of surveys of different sizes in headless Chromium, on a running
surveyd, signed in with each survey's admin token; and the server's time to serve the map's points.

  .build/venv-browser/bin/python Benchmarks/map_pages.py --port P --rounds 5 \
      --survey N:ORG:TOKEN:SURVEY [--survey N:ORG:TOKEN:SURVEY ...]

For each survey (N located responses): the points URL the page names (read from its `data-points`)
fetched ROUNDS times over HTTP with the sign-in cookie (first byte, total, bytes); then the Map view
opened in a headless Chromium of its own (Tests/Browser's helpers; one per survey, so no sign-in
falls inside a round), one round of each survey in turn, after one unmeasured round each.

A round is a navigation from about:blank to the Map view. "Loaded" is when the page is drawn with
every point: a script put before the page's own (CDP Page.addScriptToEvaluateOnNewDocument) checks
at every animation frame that `#map` carries `data-markers` equal to N, that the marker pane's
icons add up to N (a cluster by the count it shows, a single marker by one; fitBounds puts every
point in view), and that no zoom or cluster animation runs; its `performance.now()` then (ms from
the navigation's start) is the round's time. This holds for a page that sets `data-markers` before
markercluster's chunked loading has drawn anything too: it waits for the drawing. Per round also:
the points request in the page's resource timing (start, first byte, end, bytes), the page's own
`performance.mark`s when it has them (map-points-parsed, map-markers-made, map-clusters-added),
and the JS heap after a garbage collection (CDP Runtime.getHeapUsage).

One line per survey: "n=N map: median_ms=… min_ms=… max_ms=… rounds=R" and the medians of the
parts, then the largest survey's median over the smallest's."""
import argparse, html, http.client, json, os, re, statistics, sys, time, urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Browser"))

# Runs before the page's scripts, at every frame until the map shows all its points.
WATCH = r"""
(function () {
  var t0 = performance.now();
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
        window.__mapLoaded = { t: performance.now(), markers: sum, clusters: clusters, icons: icons.length };
        return;
      }
    }
    requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
})();
"""

PARTS = """
var r = performance.getEntriesByType("resource").filter(function (e) { return e.name.indexOf("/points.") >= 0; })[0];
var nav = performance.getEntriesByType("navigation")[0];
var mark = function (n) { var m = performance.getEntriesByName(n); return m.length ? m[0].startTime : null; };
return { loaded: window.__mapLoaded,
         dcl: nav ? nav.domContentLoadedEventEnd : null, load: nav ? nav.loadEventEnd : null,
         pointsStart: r ? r.startTime : null, pointsFirstByte: r ? r.responseStart : null, pointsEnd: r ? r.responseEnd : null,
         pointsBytes: r ? r.encodedBodySize : null,
         parsed: mark("map-points-parsed"), made: mark("map-markers-made"), added: mark("map-clusters-added") };
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

    # The server alone: the points URL the page names, fetched as the page fetches it.
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
        m = re.search(r'data-points="([^"]+)"', page)
        if r.status != 200 or not m:
            sys.exit(f"map_pages: the map page answered {r.status} without a points URL")
        s["points"] = html.unescape(m.group(1))
        first, total, size = [], [], 0
        for _ in range(a.rounds):
            t = time.monotonic()
            conn.request("GET", s["points"], headers={"Cookie": cookie, "Accept": "application/geo+json"})
            r = conn.getresponse()
            first.append((time.monotonic() - t) * 1000)
            body = r.read()
            total.append((time.monotonic() - t) * 1000)
            if r.status != 200:
                sys.exit(f"map_pages: the points answered {r.status}")
            size = len(body)
        doc = json.loads(body)
        got = len(doc.get("features", doc.get("points", [])))  # the GeoJSON export's features, or the compact points
        if got != s["n"]:
            sys.exit(f"map_pages: the points URL gave {got} points, not {s['n']}")
        print(f"n={s['n']} points served: median_ms={med(total):.0f} min_ms={min(total):.0f} max_ms={max(total):.0f} "
              f"first_byte_ms={med(first):.0f} bytes={size} ({size / s['n']:.0f} a point) points={got} "
              f"type={r.getheader('Content-Type')} url={s['points'].split('?')[0].rsplit('/', 1)[-1]}", flush=True)
        conn.close()

    # The browser: one Chromium per survey, signed in once; rounds in turn.
    for s in surveys:
        d = browser(DESKTOP)
        d.set_page_load_timeout(a.timeout)
        sign_in_token(d, srv, s["token"])
        d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        d.execute_cdp_cmd("HeapProfiler.enable", {})
        s["driver"], s["rounds"] = d, []

    def one_round(s):
        d = s["driver"]
        d.get("about:blank")
        d.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        d.get(s["url"])
        WebDriverWait(d, a.timeout, poll_frequency=0.05).until(lambda d: d.execute_script("return window.__mapLoaded || null"))
        parts = d.execute_script(PARTS)
        if "error" in parts["loaded"]:
            sys.exit(f"map_pages: the map failed: {parts['loaded']['error']}")
        if parts["loaded"]["markers"] != s["n"]:
            sys.exit(f"map_pages: the map shows {parts['loaded']['markers']} points, not {s['n']}")
        d.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        heap = d.execute_cdp_cmd("Runtime.getHeapUsage", {})
        parts["heap_mb"] = heap["usedSize"] / 1e6
        return parts

    for s in surveys:  # warm: the scripts in the cache, the server's pages read once
        one_round(s)
    for _ in range(a.rounds):
        for s in surveys:
            s["rounds"].append(one_round(s))
            r = s["rounds"][-1]
            print(f"  n={s['n']} round {len(s['rounds'])}: loaded_ms={r['loaded']['t']:.0f} points_end_ms={fmt(r['pointsEnd'])} "
                  f"clusters_added_ms={fmt(r['added'])} icons={r['loaded']['icons']} heap_mb={r['heap_mb']:.0f}", flush=True)

    medians = {}
    for s in surveys:
        rs = s["rounds"]
        t = [r["loaded"]["t"] for r in rs]
        medians[s["n"]] = statistics.median(t)
        part = lambda k: med([r[k] for r in rs])  # noqa: E731
        fetch = med([r["pointsEnd"] - r["pointsStart"] for r in rs if r["pointsEnd"] is not None])
        print(f"n={s['n']} map: median_ms={statistics.median(t):.0f} min_ms={min(t):.0f} max_ms={max(t):.0f} rounds={len(rs)} "
              f"dom_content_loaded_ms={fmt(part('dcl'))} points_start_ms={fmt(part('pointsStart'))} "
              f"points_first_byte_ms={fmt(part('pointsFirstByte'))} points_end_ms={fmt(part('pointsEnd'))} points_fetch_ms={fmt(fetch)} "
              f"points_bytes={fmt(part('pointsBytes'))} parsed_ms={fmt(part('parsed'))} markers_made_ms={fmt(part('made'))} "
              f"clusters_added_ms={fmt(part('added'))} clusters_shown={rs[-1]['loaded']['clusters']} "
              f"heap_mb={med([r['heap_mb'] for r in rs]):.0f}", flush=True)
    lo, hi = surveys[0]["n"], surveys[-1]["n"]
    if hi != lo:
        print(f"map n={hi} / n={lo}: {medians[hi] / medians[lo]:.2f}x the time for {hi / lo:.0f}x the points "
              f"(target: n=100000 < 3000 ms: {'met' if medians.get(100000, 1e9) < 3000 else 'not met'})", flush=True)
    quit_browsers()


if __name__ == "__main__":
    main()
