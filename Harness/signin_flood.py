#!/usr/bin/env python3
"""Sign-in flood: many wrong console sign-ins at once, from many client addresses, against a real
surveyd. Each password check (Argon2id) holds 19 MiB, and sign-in needs no session, so the server
bounds the checks running at once: past the bound it answers 429 / 1030 with Retry-After, and
after the flood its memory goes back down.

Checks: every answer is 401 or 429 (429 with Retry-After), at least one 429 (the bound held),
the server's peak RSS (VmHWM) stays under --max-rss-mb while the flood runs, its RSS afterwards
is back near where it started, the process is alive and `surveyd check` passes.

  python3 Harness/signin_flood.py                    # 200 at once, limit 150 MB
  python3 Harness/signin_flood.py --concurrent 400 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surveyd_client import Checks, ServerProcess, build_request, read_reply  # noqa: E402


def rss_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def sign_in(port: int, source: str, n: int) -> tuple[int, str | None]:
    body = f"email=flood{n}%40example.org&password=not+the+password+{n}".encode()
    data = build_request("POST", "/console/sign-in", port, body=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0)) as s:
            s.sendall(data)
            r = read_reply(s)
            return r.status, r.header("retry-after")
    except Exception as e:  # noqa: BLE001 - any failure is an answer that is not 401/429
        return -1, str(e)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrent", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--max-rss-mb", type=int, default=150)
    a = p.parse_args()
    checks = Checks("signin_flood")
    server = ServerProcess.fresh("signin-flood")
    server.start()
    pid = server.pid
    try:
        time.sleep(0.5)
        before = rss_kb(pid, "VmRSS")
        statuses: list[tuple[int, str | None]] = []
        lock = threading.Lock()
        for rnd in range(a.rounds):
            start = threading.Barrier(a.concurrent)

            def one(i: int) -> None:
                start.wait()
                # A distinct loopback address each (127.0.x.y): the per-address throttle is not
                # what answers, the bound on checks at once is.
                src = f"127.{1 + rnd}.{1 + i // 250}.{1 + i % 250}"
                r = sign_in(server.port, src, rnd * a.concurrent + i)
                with lock:
                    statuses.append(r)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(a.concurrent)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        peak = rss_kb(pid, "VmHWM")
        time.sleep(1.0)
        after = rss_kb(pid, "VmRSS")
        counts: dict[int, int] = {}
        for s, _ in statuses:
            counts[s] = counts.get(s, 0) + 1
        print(f"signin_flood: {a.rounds} rounds of {a.concurrent} at once: answers {dict(sorted(counts.items()))}; "
              f"RSS before {before // 1024} MB, peak {peak // 1024} MB, after {after // 1024} MB", flush=True)
        checks.check("every answer is 401 or 429", set(counts) <= {401, 429}, str(counts))
        checks.check("every 429 carries Retry-After", all(ra for s, ra in statuses if s == 429))
        checks.check("the bound on checks at once answered 429", counts.get(429, 0) > 0, str(counts))
        checks.check(f"peak RSS under {a.max_rss_mb} MB", 0 < peak < a.max_rss_mb * 1024, f"{peak // 1024} MB")
        checks.check("RSS afterwards within 40 MB of before", after - before < 40 * 1024, f"{before // 1024} -> {after // 1024} MB")
        checks.check("the server is still running", server.running, "")
    finally:
        server.terminate()
    server.expect_check(checks, "surveyd check passes afterwards")
    server.remove()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
