#!/usr/bin/env python3
"""Client retries through the fault-injecting proxy converge to exactly one response and one
upload per client id.

Collectors submit responses (some with a photo), upload files (plain PUT and tus resumable), and
a reviewer takes responses through startReview and approve with Idempotency-Key — all through a
FaultProxy that drops answers after the server processed the request, truncates answers, resets
uploads mid-body and delays requests past the client's timeout (so a retry can overtake the
original). After an ambiguous failure a client either resends the identical bytes or first
reconciles (GET /responses?clientSubmissionId=…, GET /uploads/{id}, tus HEAD).

Checks: one row per clientSubmissionId / clientUploadId with the ids and hashes the clients were
given; every answer for one id named the same responseId; review steps applied once each; tus
offsets never went back; reconcile answers 200 for one's own, 404 for unknown or someone else's;
no temp file remains; `surveyd check` exits 0.

  python3 Harness/test_faults.py            # short form
  python3 Harness/test_faults.py --ops 60   # more operations per client
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import sys
import threading
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_proxy import FaultProxy  # noqa: E402
from surveyd_client import (FILE_QUESTION, Checks, Client, HTTPFailure, ServerProcess, build_request, db_connect,  # noqa: E402
                            jpeg, log, new_id, seed_org, sha256_hex)


class Run:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.server = ServerProcess.fresh("faults")
        self.lock = threading.Lock()
        self.problems: list[str] = []
        self.subs: list[dict] = []
        self.ups: list[dict] = []
        self.tus: list[dict] = []
        self.reviews: list[dict] = []
        self.counts = {"requests": 0, "ambiguous": 0, "reconciles": 0, "reconciled_found": 0, "resends": 0, "replays": 0}

    def problem(self, msg: str) -> None:
        with self.lock:
            self.problems.append(msg)
        log(f"PROBLEM: {msg}")

    def bump(self, k: str, n: int = 1) -> None:
        with self.lock:
            self.counts[k] += n

    def via(self) -> Client:
        return Client(self.proxy.port, timeout=self.a.client_timeout)

    def send(self, data: bytes, head: bool = False):
        self.bump("requests")
        try:
            r = self.via().send_raw(data, head_only=head)
        except HTTPFailure:
            self.bump("ambiguous")
            return None
        if r.status >= 500:
            self.problem(f"5xx through the proxy: {r.status} {r.text[:200]}")
        if r.header("idempotent-replayed") == "true":
            self.bump("replays")
        return r

    # -- a submission, retried until definitive

    def submit(self, user, survey, rng: random.Random, photo: Optional[str]) -> None:
        org = self.org
        csid = new_id("flt")
        answers = {"n": rng.randint(0, 999)}
        if photo:
            answers[FILE_QUESTION] = {"clientUploadId": photo}
        body = {"clientSubmissionId": csid, "surveyVersionId": survey.version_id, "contentHash": survey.content_hash,
                "answers": answers}
        data = build_request("POST", f"/v1/orgs/{org.org_id}/responses", 0, user.token, body)
        seen: list[str] = []
        rec = {"csid": csid, "user": user, "seen": seen, "final": None, "survey": survey}
        for attempt in range(self.a.max_attempts):
            r = self.send(data)
            if r is None:
                if rng.random() < 0.5:
                    found = self.reconcile_response(user, csid)
                    if found:
                        seen.append(found)
                        rec["final"] = found
                        break
                    self.bump("resends")
                continue
            if r.status in (200, 201):
                seen.append(r.json["responseId"])
                rec["final"] = r.json["responseId"]
                break
            self.problem(f"submission {csid}: {r.status} {r.text[:200]}")
            break
        else:
            self.problem(f"submission {csid}: no definitive answer in {self.a.max_attempts} attempts")
        with self.lock:
            self.subs.append(rec)

    def reconcile_response(self, user, csid: str) -> Optional[str]:
        self.bump("reconciles")
        for _ in range(20):
            r = self.send(build_request("GET", f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={csid}", 0, user.token))
            if r is None:
                continue
            if r.status == 200:
                self.bump("reconciled_found")
                return r.json["responseId"]
            if r.status == 404 and r.error_code == 1005:
                return None
            self.problem(f"reconcile {csid}: {r.status} {r.text[:200]}")
            return None
        return None

    # -- a plain upload

    def upload(self, user, survey, rng: random.Random) -> Optional[str]:
        org = self.org
        cuid = new_id("fup")
        content = jpeg(rng.choice([16_000, 100_000, 400_000, 1_500_000]), seed=rng.randrange(1 << 30))
        headers = {"Content-Type": "image/jpeg", "Survey-Version-Id": survey.version_id, "Question-Id": FILE_QUESTION,
                   "Content-Digest": "sha-256=:" + base64.b64encode(hashlib.sha256(content).digest()).decode() + ":"}
        data = build_request("PUT", f"/v1/orgs/{org.org_id}/uploads/{cuid}", 0, user.token, body=content, headers=headers)
        rec = {"cuid": cuid, "sha": sha256_hex(content), "size": len(content), "seen": [], "ok": False}
        for attempt in range(self.a.max_attempts):
            r = self.send(data)
            if r is None:
                if rng.random() < 0.5:
                    self.bump("reconciles")
                    m = None
                    for _ in range(20):
                        m = self.send(build_request("GET", f"/v1/orgs/{org.org_id}/uploads/{cuid}", 0, user.token))
                        if m is not None:
                            break
                    if m is not None and m.status == 200:
                        self.bump("reconciled_found")
                        rec["seen"].append(m.json["sha256"])
                        rec["ok"] = True
                        break
                    self.bump("resends")
                continue
            if r.status in (200, 201):
                rec["seen"].append(r.json["sha256"])
                rec["ok"] = True
                break
            self.problem(f"upload {cuid}: {r.status} {r.text[:200]}")
            break
        else:
            self.problem(f"upload {cuid}: no definitive answer")
        with self.lock:
            self.ups.append(rec)
        return cuid if rec["ok"] else None

    # -- a tus resumable upload

    def tus_upload(self, user, survey, rng: random.Random) -> None:
        org = self.org
        cuid = new_id("tus")
        content = jpeg(rng.choice([300_000, 900_000]), seed=rng.randrange(1 << 30))
        b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
        meta = ",".join([f"clientUploadId {b64(cuid)}", f"surveyVersionId {b64(survey.version_id)}",
                         f"questionId {b64(FILE_QUESTION)}", f"contentType {b64('image/jpeg')}"])
        base = f"/v1/orgs/{org.org_id}/uploads/resumable"
        create = build_request("POST", base, 0, user.token, body=b"",
                               headers={"Tus-Resumable": "1.0.0", "Upload-Length": str(len(content)), "Upload-Metadata": meta})
        rec = {"cuid": cuid, "sha": sha256_hex(content), "size": len(content), "offsets": [], "ok": False, "location": None}
        loc = None
        for _ in range(self.a.max_attempts):
            r = self.send(create)
            if r is None:
                continue
            if r.status == 201 and r.header("location"):
                loc = r.header("location")
                break
            self.problem(f"tus create {cuid}: {r.status} {r.text[:200]}")
            break
        if loc is None:
            self.problem(f"tus create {cuid}: no location")
            with self.lock:
                self.tus.append(rec)
            return
        locs = {loc}
        chunk = 128 * 1024
        for _ in range(self.a.max_attempts * 4):
            h = self.send(build_request("HEAD", loc, 0, user.token, headers={"Tus-Resumable": "1.0.0"}), head=True)
            if h is None:
                continue
            if h.status != 200:
                self.problem(f"tus HEAD {cuid}: {h.status}")
                break
            off = int(h.header("upload-offset"))
            rec["offsets"].append(off)
            if off == len(content):
                rec["ok"] = True
                break
            piece = content[off:off + chunk]
            p = self.send(build_request("PATCH", loc, 0, user.token, body=piece, headers={
                "Tus-Resumable": "1.0.0", "Upload-Offset": str(off), "Content-Type": "application/offset+octet-stream",
                "Upload-Checksum": "sha256 " + base64.b64encode(hashlib.sha256(piece).digest()).decode()}))
            if p is None or p.status in (204, 409):
                continue
            self.problem(f"tus PATCH {cuid} at {off}: {p.status} {p.text[:200]}")
            break
        # Creating again with the same clientUploadId is the same upload.
        again = None
        for _ in range(20):
            again = self.send(create)
            if again is not None:
                break
        if again is not None:
            locs.add(again.header("location") or "")
        rec["location"] = loc
        rec["same_location"] = len(locs) == 1
        with self.lock:
            self.tus.append(rec)

    # -- review steps with Idempotency-Key

    def review_step(self, reviewer, rid: str, action: str, rev: int, rng: random.Random) -> Optional[dict]:
        key = new_id("frv")
        data = build_request("POST", f"/v1/orgs/{self.org.org_id}/responses/{rid}/review", 0, reviewer.token,
                             {"action": action, "expectedRevision": rev}, headers={"Idempotency-Key": key})
        for _ in range(self.a.max_attempts):
            r = self.send(data)
            if r is None:
                continue
            if r.status == 200:
                rec = {"rid": rid, "key": key, "action": action, "revision": r.json["revision"], "state": r.json["reviewState"]}
                with self.lock:
                    self.reviews.append(rec)
                return rec
            self.problem(f"review {action} {rid} rev {rev}: {r.status} {r.text[:200]}")
            return None
        self.problem(f"review {action} {rid}: no definitive answer")
        return None

    # -- workers

    def collector(self, i: int) -> None:
        rng = random.Random(self.a.seed * 100 + i)
        user = self.org.collectors[i]
        for k in range(self.a.ops):
            survey = self.org.review_survey if k % 2 == 0 else self.org.plain_survey
            x = rng.random()
            if x < 0.25:
                photo = self.upload(user, survey, rng)
                self.submit(user, survey, rng, photo)
            elif x < 0.45:
                self.upload(user, survey, rng)
            else:
                self.submit(user, survey, rng, None)
        for _ in range(self.a.tus):
            self.tus_upload(user, self.org.review_survey, rng)

    def reviewer(self) -> None:
        rng = random.Random(self.a.seed * 7)
        done: set[str] = set()
        deadline = time.monotonic() + self.a.time_limit * 0.6
        while time.monotonic() < deadline and not self.collectors_done.is_set():
            with self.lock:
                todo = [s["final"] for s in self.subs if s["final"] and s["survey"].review_required and s["final"] not in done]
            if not todo:
                time.sleep(0.05)
                continue
            rid = rng.choice(todo)
            done.add(rid)
            step = self.review_step(self.org.reviewer, rid, "startReview", 1, rng)
            if step:
                self.review_step(self.org.reviewer, rid, "approve", step["revision"], rng)

    # -- run and verify

    def run(self) -> int:
        a = self.a
        checks = Checks("faults")
        self.server.start()
        self.org = seed_org(self.server, "Fault team", collectors=a.clients, reviewers=1)
        weights = {"pass": 3, "drop_response": 2, "truncate_response": 1, "reset_mid_upload": 2, "delay": 1.5}
        self.proxy = FaultProxy(self.server.port, weights, seed=a.seed, max_delay=a.max_delay).start()
        log(f"faults: proxy 127.0.0.1:{self.proxy.port} -> surveyd {self.server.port}; {a.clients} clients x {a.ops} ops, "
            f"{a.tus} tus uploads each; client timeout {a.client_timeout}s, delays up to {a.max_delay}s")
        t0 = time.monotonic()
        self.collectors_done = threading.Event()
        ts = [threading.Thread(target=self.collector, args=(i,), daemon=True) for i in range(a.clients)]
        rv = threading.Thread(target=self.reviewer, daemon=True)
        for t in ts:
            t.start()
        rv.start()
        for t in ts:
            t.join(timeout=max(1.0, a.time_limit - (time.monotonic() - t0)))
        self.collectors_done.set()
        rv.join(timeout=60)
        checks.check("every client finished within the time bound", not any(t.is_alive() for t in ts + [rv]),
                     f"{time.monotonic() - t0:.1f}s")
        drained = self.proxy.drain(timeout=30)
        checks.check("the proxy delivered every delayed request", drained)
        self.proxy.stop()
        seconds = time.monotonic() - t0

        # -- figures
        pc = self.proxy.counts
        print("fault figures:")
        print(f"  seconds: {seconds:.1f}")
        print(f"  proxied connections: {self.proxy.connections}")
        print(f"  faults injected: {self.proxy.faults} ({', '.join(f'{k} {v}' for k, v in pc.items() if k != 'pass')})")
        print(f"  requests: {self.counts['requests']}; ambiguous outcomes: {self.counts['ambiguous']}; "
              f"reconciles: {self.counts['reconciles']} (found {self.counts['reconciled_found']}); replays answered: {self.counts['replays']}")
        print(f"  submissions: {len(self.subs)}; uploads: {len(self.ups)}; tus uploads: {len(self.tus)}; review steps: {len(self.reviews)}")
        for m in ("drop_response", "truncate_response", "reset_mid_upload", "delay"):
            checks.check(f"faults of kind {m} were injected", pc[m] > 0, str(pc[m]))

        # -- the database
        conn = db_connect(self.server.db_path)
        try:
            rows = conn.execute("SELECT client_submission_id, response_id, submitter FROM responses WHERE org_id=?",
                                (self.org.org_id,)).fetchall()
            uprows = conn.execute("SELECT client_upload_id, sha256, size FROM uploads WHERE org_id=?", (self.org.org_id,)).fetchall()
            audit_rows = conn.execute("SELECT target_id, action, revision FROM audit WHERE org_id=? AND action LIKE 'review.%'",
                                      (self.org.org_id,)).fetchall()
            revs = dict(conn.execute("SELECT response_id, revision FROM responses WHERE org_id=?", (self.org.org_id,)).fetchall())
        finally:
            conn.close()
        by_csid: dict[str, list] = {}
        for r in rows:
            by_csid.setdefault(r[0], []).append(r)
        bad = []
        for s in self.subs:
            got = by_csid.get(s["csid"], [])
            if s["final"] is None:
                bad.append(f"{s['csid']}: never got an answer")
            elif len(got) != 1:
                bad.append(f"{s['csid']}: {len(got)} rows")
            elif got[0][1] != s["final"] or set(s["seen"]) != {s["final"]}:
                bad.append(f"{s['csid']}: answers {s['seen']}, database {got[0][1]}")
        checks.check("exactly one response row per clientSubmissionId, with the responseId every answer named", not bad,
                     f"{len(self.subs)} submissions, {len(rows)} rows; " + "; ".join(bad[:3]))
        checks.check("no response row the clients do not know of", len(rows) == len(self.subs), f"{len(rows)} rows")

        by_cuid: dict[str, list] = {}
        for r in uprows:
            by_cuid.setdefault(r[0], []).append(r)
        bad = []
        for u in self.ups + [t for t in self.tus]:
            got = by_cuid.get(u["cuid"], [])
            if not u["ok"]:
                bad.append(f"{u['cuid']}: not completed")
            elif len(got) != 1 or got[0][1] != u["sha"] or got[0][2] != u["size"]:
                bad.append(f"{u['cuid']}: {len(got)} rows {got[:1]}, expected sha {u['sha'][:12]} size {u['size']}")
            elif any(x != u["sha"] for x in u.get("seen", [])):
                bad.append(f"{u['cuid']}: an answer named sha {u['seen']}")
        checks.check("exactly one upload row per clientUploadId, with the bytes' sha256 and size (plain and tus)", not bad,
                     f"{len(self.ups)} plain + {len(self.tus)} tus, {len(uprows)} rows; " + "; ".join(bad[:3]))
        checks.check("no upload row the clients do not know of", len(uprows) == len(self.ups) + len(self.tus), f"{len(uprows)} rows")
        back = [t["cuid"] for t in self.tus if any(b < a_ for a_, b in zip(t["offsets"], t["offsets"][1:]))]
        checks.check("tus offsets never went back", not back, str(back[:3]))
        checks.check("creating a tus upload again names the same upload", all(t.get("same_location") for t in self.tus))

        bad = []
        per_rid: dict[str, int] = {}
        for a_ in audit_rows:
            per_rid[a_[0]] = per_rid.get(a_[0], 0) + 1
        steps: dict[str, int] = {}
        for rv_ in self.reviews:
            steps[rv_["rid"]] = steps.get(rv_["rid"], 0) + 1
        for rid, n in steps.items():
            if per_rid.get(rid, 0) != n or revs.get(rid) != 1 + n:
                bad.append(f"{rid}: {n} steps answered, {per_rid.get(rid, 0)} audit entries, revision {revs.get(rid)}")
        checks.check("each review step applied once (one audit entry, one revision each)", not bad,
                     f"{len(self.reviews)} steps on {len(steps)} responses; " + "; ".join(bad[:3]))

        # -- reconcile, directly
        c = self.server.client()
        bad = []
        for s in self.subs:
            if s["final"] is None:
                continue
            r = c.get(f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={s['csid']}", token=s["user"].token)
            if r.status != 200 or r.json.get("responseId") != s["final"]:
                bad.append(f"{s['csid']}: {r.status}")
        checks.check("GET /responses?clientSubmissionId reconciles every submission to its responseId", not bad,
                     "; ".join(bad[:3]))
        unknown = c.get(f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={new_id('never')}",
                        token=self.org.collectors[0].token)
        checks.check("reconcile of a never-sent id is 404/1005", unknown.status == 404 and unknown.error_code == 1005,
                     f"{unknown.status} {unknown.error_code}")
        if len(self.org.collectors) > 1:
            theirs = next((s for s in self.subs if s["user"] is self.org.collectors[0] and s["final"]), None)
            if theirs:
                r = c.get(f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={theirs['csid']}",
                          token=self.org.collectors[1].token)
                checks.check("reconcile of another collector's id is the same 404/1005",
                             r.status == 404 and r.error_code == 1005 and r.body == unknown.body, f"{r.status} {r.text[:120]}")

        # -- nothing partial
        deadline = time.monotonic() + 5
        while self.server.files("tmp") and time.monotonic() < deadline:
            time.sleep(0.1)
        checks.check("no temp files left by reset uploads", not self.server.files("tmp"), str(self.server.files("tmp")[:5]))
        checks.check("no server error and no unexpected answer", not self.problems, "; ".join(self.problems[:4]))
        rc = self.server.terminate()
        checks.check("graceful stop exits 0", rc == 0, f"exit {rc}")
        self.server.expect_check(checks, "surveyd check --data-dir exits 0")
        if checks.failed == 0 and not a.keep:
            self.server.remove()
        else:
            log(f"faults: data dir kept at {self.server.data_dir}")
        return checks.finish()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--ops", type=int, default=30, help="operations per client")
    p.add_argument("--tus", type=int, default=2, help="tus uploads per client")
    p.add_argument("--client-timeout", type=float, default=1.0)
    p.add_argument("--max-delay", type=float, default=1.5)
    p.add_argument("--max-attempts", type=int, default=60)
    p.add_argument("--time-limit", type=float, default=150.0)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--keep", action="store_true")
    return Run(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
