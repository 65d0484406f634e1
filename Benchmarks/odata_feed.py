#!/usr/bin/env python3
"""Reads a survey's OData feed from a running surveyd the way a client refreshing it does: one
keep-alive connection, `@odata.nextLink` followed until it is absent, every body read in full and
discarded (the link is taken from the body's head: canonical JSON puts it before `value`).

  odata_feed.py measure --port P --token T --org ORG --survey SRV --db DATA/surveyd.sqlite [--rounds 5]
      the entity sets from the service document; `<set>?$top=1` of each; a full read of each by
      nextLink pages (1,000 rows a page), then its first, middle and last page again ROUNDS times;
      the main table read in full ROUNDS times alternating with `sqlite3 -json` of the same rows
      (the stored columns, in id order) to /dev/null. Lines "name: median_ms=… min_ms=… …".
  odata_feed.py refresh --port P --token T --org ORG --survey SRV --seconds S [--tables A,B]
      reads the tables in full (a refresh), again and again until S seconds have passed, then
      prints how many refreshes ended, the pages and rows read and the slowest page.
"""
import argparse, http.client, json, re, statistics, subprocess, sys, time, urllib.parse

NEXT = re.compile(rb'"@odata\.nextLink":"((?:[^"\\]|\\.)*)"')


class Feed:
    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def get(self, path: str):
        """(ms, body) of one GET; a non-200 ends the run."""
        t = time.monotonic()
        for attempt in range(2):
            try:
                self.c.request("GET", path, headers={"Authorization": "Bearer " + self.token, "Accept": "application/json"})
                r = self.c.getresponse()
                body = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                if attempt:
                    raise
                self.c.close()
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                t = time.monotonic()
        ms = (time.monotonic() - t) * 1000
        if r.status != 200:
            sys.exit(f"odata_feed: {path} answered {r.status}: {body[:300]!r}")
        return ms, body

    @staticmethod
    def next_path(body: bytes):
        m = NEXT.search(body, 0, 4096)
        if not m:
            return None
        u = urllib.parse.urlsplit(json.loads(b'"' + m.group(1) + b'"'))
        return u.path + "?" + u.query

    def walk(self, path: str):
        """Every page of a table by nextLink: [(path, ms, rows, bytes)]."""
        pages = []
        while path:
            ms, body = self.get(path)
            pages.append((path, ms, body.count(b'"__id":'), len(body)))
            path = self.next_path(body)
        return pages


def stats(name: str, times, extra: str = "") -> str:
    return f"{name}: median_ms={statistics.median(times):.1f} min_ms={min(times):.1f} max_ms={max(times):.1f}{extra}"


def measure(a) -> None:
    f = Feed(a.port, a.token)
    root = f"/v1/orgs/{a.org}/surveys/{a.survey}.svc"
    _, doc = f.get(root)
    sets = [v["url"] for v in json.loads(doc)["value"]]
    print(f"entity_sets: {','.join(sets)}", flush=True)
    f.get(root + "/$metadata")
    for s in sets:
        path = f"{root}/{s}?$top=1"
        f.get(path)  # the connection and the route warm
        times = [f.get(path)[0] for _ in range(a.rounds)]
        print(stats(f"{s} $top=1", times), flush=True)
    for s in sets:
        t = time.monotonic()
        pages = f.walk(f"{root}/{s}")
        total = time.monotonic() - t
        rows = sum(p[2] for p in pages)
        ms = [p[1] for p in pages]
        print(f"{s} full read: pages={len(pages)} rows={rows} s={total:.2f} rows_per_s={rows / total:.0f} "
              f"page_median_ms={statistics.median(ms):.1f} page_max_ms={max(ms):.1f} mb={sum(p[3] for p in pages) / 1e6:.1f}", flush=True)
        for label, i in (("first", 0), ("middle", len(pages) // 2), ("last", len(pages) - 1)):
            path, _, n, _ = pages[i]
            times = [f.get(path)[0] for _ in range(a.rounds)]
            print(stats(f"{s} page {label} ({i + 1} of {len(pages)})", times, f" rows={n}"), flush=True)
    # The main table against sqlite3 -json of the same rows, alternately.
    sql = ("SELECT response_id, client_submission_id, survey_version_id, submitter, received_at, captured_at, review_state,"
           f" revision, field_task_id, answers FROM responses WHERE org_id = '{a.org}' AND survey_id = '{a.survey}' ORDER BY response_id")
    floor_sum = feed_sum = 0.0
    for r in range(1, a.rounds + 1):
        t = time.monotonic()
        subprocess.run(["sqlite3", "-json", a.db, sql], stdout=subprocess.DEVNULL, check=True)
        fl = time.monotonic() - t
        t = time.monotonic()
        pages = f.walk(f"{root}/Submissions")
        fe = time.monotonic() - t
        rows = sum(p[2] for p in pages)
        print(f"round {r}: floor_s={fl:.2f} feed_s={fe:.2f} rows={rows} ratio={fl / fe:.3f}", flush=True)
        floor_sum += fl; feed_sum += fe
    print(f"Submissions full read vs sqlite3 -json: ratio={floor_sum / feed_sum:.3f} (sum of {a.rounds} rounds each)", flush=True)


def refresh(a) -> None:
    f = Feed(a.port, a.token)
    root = f"/v1/orgs/{a.org}/surveys/{a.survey}.svc"
    end = time.monotonic() + a.seconds
    done = pages = rows = 0
    slowest = 0.0
    while time.monotonic() < end:
        for s in a.tables.split(","):
            path = f"{root}/{s}"
            while path and time.monotonic() < end:
                ms, body = f.get(path)
                pages += 1; rows += body.count(b'"__id":'); slowest = max(slowest, ms)
                path = Feed.next_path(body)
            if path:
                break
        else:
            done += 1
    print(f"refreshes={done} pages={pages} rows={rows} rows_per_s={rows / a.seconds:.0f} slowest_page_ms={slowest:.0f}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["measure", "refresh"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--org", required=True)
    p.add_argument("--survey", required=True)
    p.add_argument("--db")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--tables", default="Submissions")
    a = p.parse_args()
    measure(a) if a.mode == "measure" else refresh(a)


if __name__ == "__main__":
    main()
