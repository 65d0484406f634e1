#!/usr/bin/env python3
"""Reads one survey's `Submissions` in full through ODK Central's OData path and through
surveyd's own, in the same minutes, alternately, on one keep-alive connection each way a client
would, every body read in full and its rows counted.

  central_odata_feed.py --port P --token T --org ORG --survey SRV --project N --form XMLFORMID [--rounds 3]

Each round reads, in turning order (odd rounds as listed, even rounds reversed):
  own       /v1/orgs/ORG/surveys/SRV.svc/Submissions by `@odata.nextLink` pages (1,000 rows, the
            feed's default), as Power BI or odata_feed.py reads it;
  central   /v1/projects/N/forms/XMLFORMID.svc/Submissions in one GET, as pyodk's
            `submissions.get_table()` reads it (the whole table, written a page at a time);
  paged     the same Central path with `Prefer: odata.maxpagesize=1000`, by its nextLinks.
Lines "round r: own_s=… central_s=… paged_s=… rows=…", then the ratios of rates (Central / own,
paged / own) from the sums of the rounds. Exits 1 when a read's rows differ from the own feed's.
"""
import argparse, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from odata_feed import Feed  # noqa: E402  (this directory)


class PagedFeed(Feed):
    """The same reads with `Prefer: odata.maxpagesize` on every request."""
    def __init__(self, port: int, token: str, page_size: int):
        super().__init__(port, token)
        self.prefer = f"odata.maxpagesize={page_size}"

    def get(self, path: str):
        t = time.monotonic()
        self.c.request("GET", path, headers={"Authorization": "Bearer " + self.token, "Accept": "application/json", "Prefer": self.prefer})
        r = self.c.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit(f"central_odata_feed: {path} answered {r.status}: {body[:300]!r}")
        return (time.monotonic() - t) * 1000, body


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("--token", "--org", "--survey", "--form"):
        p.add_argument(name, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--project", type=int, required=True)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    own_root = f"/v1/orgs/{a.org}/surveys/{a.survey}.svc/Submissions"
    central_root = f"/v1/projects/{a.project}/forms/{a.form}.svc/Submissions"
    own, central, paged = Feed(a.port, a.token), Feed(a.port, a.token), PagedFeed(a.port, a.token, 1000)

    def read_own():
        return sum(page[2] for page in own.walk(own_root))

    def read_central():
        _, body = central.get(central_root)
        if b'"@odata.nextLink"' in body[:4096]:
            sys.exit("central_odata_feed: the whole table came with a nextLink")
        return body.count(b'"__id":')

    def read_paged():
        pages = paged.walk(central_root)
        if any(not path.startswith(central_root) for path, *_ in pages):
            sys.exit("central_odata_feed: a nextLink left Central's path")
        return sum(page[2] for page in pages)

    reads = [("own", read_own), ("central", read_central), ("paged", read_paged)]
    # Warm: the route, the connection, the page cache.
    for _, read in reads:
        read()
    sums = {name: 0.0 for name, _ in reads}
    for r in range(1, a.rounds + 1):
        seconds, rows = {}, {}
        for name, read in (reads if r % 2 else list(reversed(reads))):
            t = time.monotonic()
            rows[name] = read()
            seconds[name] = time.monotonic() - t
            sums[name] += seconds[name]
        if len(set(rows.values())) != 1:
            sys.exit(f"central_odata_feed: the reads' rows differ: {rows}")
        print(f"round {r}: own_s={seconds['own']:.2f} central_s={seconds['central']:.2f} paged_s={seconds['paged']:.2f} rows={rows['own']} "
              f"central_rows_per_s={rows['own'] / seconds['central']:.0f} own_rows_per_s={rows['own'] / seconds['own']:.0f}", flush=True)
    print(f"ratio.central_whole_vs_own={sums['own'] / sums['central']:.3f} ratio.central_paged_vs_own={sums['own'] / sums['paged']:.3f} "
          f"(rate ratios: sums of {a.rounds} rounds each)", flush=True)


if __name__ == "__main__":
    main()
