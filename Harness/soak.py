#!/usr/bin/env python3
"""Soak: a real `surveyd serve` under hours of steady mixed work must not leak.

Starts a release `surveyd serve` on a fresh, seeded data dir (as the harness seeds: operator, org,
admin, collectors, a reviewer, a survey with review and one without) with a webhook that points at
a small receiver in this process, then runs a steady, moderate mixed load for --minutes:

  collectors   new submissions (some with a photo), replays of earlier submissions (identical
               bytes), plain uploads (and their replays), tus resumable uploads, resubmissions of
               responses a reviewer returned, the changes feed, look-ups by clientSubmissionId, and
               two deliberate refusals (answers that break the rules: 422 / 1002; an unknown
               clientSubmissionId: 404 / 1005)
  reviewers    startReview, then approve / returnForCorrection / reject, with Idempotency-Key;
               some steps sent twice with the same key (200, Idempotent-Replayed), some sent with
               a stale expectedRevision on purpose (409 / 1021)
  admin        incremental CSV exports (afterCursor) and a full one now and then, the console's
               main pages with a signed-in cookie, the changes feed

Every client thread pauses between operations, so the server's CPU stays well under one core and
latency measures the server, not a queue. Every answer is checked against what the contract
allows for that request; anything else is counted as unexpected and its first examples are kept.

Every 10 s a sampler records the server's RSS, open descriptors, threads, CPU, the data dir's size,
the load average and the p50/p99 latency of new submissions in that window. At the end: the table,
the verdicts (RSS, descriptors, threads flat; p99 of the last window within 1.5x of the first;
no unexpected answer; every webhook event delivered), a results file and a PNG plot. Exit 1 when
a verdict fails.

    nice -n 5 python3 Harness/soak.py --minutes 30
    python3 Harness/soak.py --minutes 2          # a quick check

The plot needs matplotlib, from a venv inside the project (never system-wide):
    python3 -m venv .build/venv-soak && .build/venv-soak/bin/pip install matplotlib
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import hmac
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surveyd_client import (FILE_QUESTION, REPO_ROOT, Client, HTTPFailure, Reply, ServerProcess,  # noqa: E402
                            build_request, jpeg, log, new_id, seed_org)

DEFAULT_BIN = os.path.join(REPO_ROOT, ".build/release/surveyd")
VENV_PYTHON = os.path.join(REPO_ROOT, ".build/venv-soak/bin/python")
SAMPLE_SECONDS = 10.0


def pct(values: list[float], p: float) -> Optional[float]:
    if not values:
        return None
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


# ---------------------------------------------------------------------------------------------
# The webhook receiver


class Receiver:
    """Counts each delivered event by its webhook-id, checks its signature, answers 204."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events: dict[str, tuple] = {}      # webhook-id -> key
        self.keys: collections.Counter = collections.Counter()
        self.deliveries = 0
        self.bad_signatures = 0
        self.secret: Optional[bytes] = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                outer.record(self.headers, body)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):  # noqa: D401
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def record(self, headers, body: bytes) -> None:
        wid = headers.get("webhook-id") or ""
        ts = headers.get("webhook-timestamp") or ""
        sig = headers.get("webhook-signature") or ""
        ok_sig = True
        if self.secret is not None:
            mac = base64.b64encode(hmac.new(self.secret, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
            ok_sig = any(s.split(",", 1)[-1] == mac for s in sig.split())
        try:
            ev = json.loads(body)
            key = event_key(ev["type"], ev["data"])
        except (ValueError, KeyError, TypeError):
            key = ("unreadable", body[:80])
        with self.lock:
            self.deliveries += 1
            if not ok_sig:
                self.bad_signatures += 1
            if wid not in self.events:
                self.events[wid] = key
                self.keys[key] += 1

    def received(self) -> set:
        with self.lock:
            return set(self.keys)

    def stop(self) -> None:
        self.httpd.shutdown()


def event_key(kind: str, data: dict) -> tuple:
    if kind == "upload.completed":
        return (kind, data.get("clientUploadId"))
    if kind == "response.accepted":
        return (kind, data.get("responseId"))
    if kind == "task.completed":
        return (kind, data.get("taskId"))
    return (kind, data.get("responseId"), data.get("revision"))


# ---------------------------------------------------------------------------------------------
# The load


class Soak:
    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.counts: collections.Counter = collections.Counter()        # (kind, status) -> n
        self.unexpected = 0
        self.examples: list[str] = []
        self.sub_lat: list[tuple[float, float]] = []                     # (monotonic end, seconds)
        self.expected_events: set = set()
        self.review_queue: "queue.Queue[tuple[str, int, int]]" = queue.Queue()   # (rid, revision, collector)
        self.returned: dict[int, "queue.Queue[tuple[str, int, str]]"] = {}
        self.samples: list[dict] = []
        self.recent_rids: list[str] = []
        self.thread_names_at: dict = {}
        self.thread_names_after: dict = {}
        self.t0 = 0.0

    # -- bookkeeping

    def count(self, kind: str, status: Any) -> None:
        with self.lock:
            self.counts[(kind, status)] += 1

    def problem(self, what: str) -> None:
        with self.lock:
            self.unexpected += 1
            if len(self.examples) < 20:
                self.examples.append(f"{time.monotonic() - self.t0:7.1f}s {what}")
        if self.unexpected <= 20:
            log(f"UNEXPECTED {what}")

    def send(self, kind: str, data: bytes, head: bool = False) -> Optional[Reply]:
        try:
            r = self.client.send_raw(data, head_only=head)
        except HTTPFailure as e:
            self.count(kind, "no answer")
            self.problem(f"{kind}: no complete answer ({e})")
            return None
        self.count(kind, r.status)
        return r

    def expect(self, kind: str, r: Optional[Reply], allowed: set) -> bool:
        """`allowed` holds statuses, or (status, errorCode) pairs for a refusal."""
        if r is None:
            return False
        if r.status in allowed or (r.status, r.error_code) in allowed:
            return True
        self.problem(f"{kind}: {r.status} {r.text[:240]}")
        return False

    def pause(self, rng: random.Random) -> None:
        self.stop.wait(rng.uniform(self.a.pause * 0.5, self.a.pause * 1.5))

    # -- collectors

    def submission_body(self, survey, rng: random.Random, photo: Optional[str]) -> tuple[str, dict]:
        csid = new_id("soak")
        answers: dict[str, Any] = {"n": rng.randint(0, 999), "notes": "soak " + csid[-8:]}
        if survey.review_required:
            answers["source"] = rng.choice(["well", "piped", "river"])
        if photo:
            answers[FILE_QUESTION] = {"clientUploadId": photo}
        return csid, {"clientSubmissionId": csid, "surveyVersionId": survey.version_id,
                      "contentHash": survey.content_hash, "answers": answers}

    def submit(self, ci: int, user, rng, state: dict) -> None:
        survey = self.org.review_survey if rng.random() < 0.5 else self.org.plain_survey
        photos = state["photos"][survey.version_id]
        photo = photos.pop() if photos and rng.random() < 0.3 else None
        csid, body = self.submission_body(survey, rng, photo)
        data = build_request("POST", f"/v1/orgs/{self.org.org_id}/responses", 0, user.token, body)
        t = time.monotonic()
        r = self.send("submit", data)
        end = time.monotonic()
        if not self.expect("submit", r, {201}):
            return
        with self.lock:
            self.sub_lat.append((end, end - t))
        rid = r.json["responseId"]
        with self.lock:
            self.expected_events.add(("response.accepted", rid))
            self.recent_rids.append(rid)       # for the console's response page
            del self.recent_rids[:-100]
        state["sent"].append((data, rid, csid))
        del state["sent"][:-50]
        if survey.review_required:
            self.review_queue.put((rid, r.json.get("revision", 1), ci))

    def replay(self, ci: int, user, rng, state: dict) -> None:
        if not state["sent"]:
            return self.submit(ci, user, rng, state)
        data, rid, _ = rng.choice(state["sent"])
        r = self.send("submit replay", data)
        if self.expect("submit replay", r, {200}) and r.json.get("responseId") != rid:
            self.problem(f"submit replay: responseId {r.json.get('responseId')} != {rid}")

    def upload(self, ci: int, user, rng, state: dict) -> None:
        survey = self.org.review_survey if rng.random() < 0.5 else self.org.plain_survey
        cuid = new_id("sup")
        content = jpeg(rng.choice([8_000, 32_000, 96_000]), seed=rng.randrange(1 << 30))
        headers = {"Content-Type": "image/jpeg", "Survey-Version-Id": survey.version_id, "Question-Id": FILE_QUESTION}
        data = build_request("PUT", f"/v1/orgs/{self.org.org_id}/uploads/{cuid}", 0, user.token, body=content, headers=headers)
        r = self.send("upload", data)
        if not self.expect("upload", r, {201}):
            return
        with self.lock:
            self.expected_events.add(("upload.completed", cuid))
        state["photos"][survey.version_id].append(cuid)
        del state["photos"][survey.version_id][:-20]
        if rng.random() < 0.15:
            self.expect("upload replay", self.send("upload replay", data), {200})

    def tus(self, ci: int, user, rng, state: dict) -> None:
        survey = self.org.review_survey
        cuid = new_id("stus")
        content = jpeg(rng.choice([150_000, 200_000]), seed=rng.randrange(1 << 30))
        b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
        meta = ",".join([f"clientUploadId {b64(cuid)}", f"surveyVersionId {b64(survey.version_id)}",
                         f"questionId {b64(FILE_QUESTION)}", f"contentType {b64('image/jpeg')}"])
        base = f"/v1/orgs/{self.org.org_id}/uploads/resumable"
        r = self.send("tus create", build_request("POST", base, 0, user.token, body=b"", headers={
            "Tus-Resumable": "1.0.0", "Upload-Length": str(len(content)), "Upload-Metadata": meta}))
        if not self.expect("tus create", r, {201}):
            return
        loc = r.header("location")
        if not loc:
            return self.problem("tus create: 201 without Location")
        loc = urllib.parse.urlsplit(loc).path
        off, chunk = 0, 64 * 1024
        while off < len(content):
            piece = content[off:off + chunk]
            p = self.send("tus patch", build_request("PATCH", loc, 0, user.token, body=piece, headers={
                "Tus-Resumable": "1.0.0", "Upload-Offset": str(off), "Content-Type": "application/offset+octet-stream",
                "Upload-Checksum": "sha256 " + base64.b64encode(hashlib.sha256(piece).digest()).decode()}))
            if not self.expect("tus patch", p, {204}):
                return
            off += len(piece)
            if off < len(content) and rng.random() < 0.3:
                h = self.send("tus head", build_request("HEAD", loc, 0, user.token, headers={"Tus-Resumable": "1.0.0"}), head=True)
                if self.expect("tus head", h, {200}) and h.header("upload-offset") != str(off):
                    self.problem(f"tus head: Upload-Offset {h.header('upload-offset')} != {off}")
        with self.lock:
            self.expected_events.add(("upload.completed", cuid))
        state["photos"][survey.version_id].append(cuid)

    def resubmit(self, ci: int, user, rng, state: dict) -> bool:
        try:
            rid, rev, _ = self.returned[ci].get_nowait()
        except queue.Empty:
            return False
        survey = self.org.review_survey
        body = {"expectedRevision": rev, "surveyVersionId": survey.version_id, "contentHash": survey.content_hash,
                "answers": {"n": rng.randint(0, 999), "source": "piped", "notes": "recounted"}}
        r = self.send("resubmit", build_request("POST", f"/v1/orgs/{self.org.org_id}/responses/{rid}/resubmit", 0,
                                                user.token, body, headers={"Idempotency-Key": new_id("srs")}))
        if self.expect("resubmit", r, {200}):
            new_rev = r.json["revision"]
            with self.lock:
                self.expected_events.add(("response.resubmitted", rid, new_rev))
            self.review_queue.put((rid, new_rev, ci))
        return True

    def changes(self, kind: str, token: str, state: dict) -> None:
        q = "limit=200" + (f"&after={state['cursor']}" if state.get("cursor") else "")
        r = self.send(kind, build_request("GET", f"/v1/orgs/{self.org.org_id}/changes?{q}", 0, token))
        if self.expect(kind, r, {200}) and r.json.get("nextCursor"):
            state["cursor"] = r.json["nextCursor"]

    def lookup(self, ci: int, user, rng, state: dict) -> None:
        if state["sent"] and rng.random() < 0.7:
            _, rid, csid = rng.choice(state["sent"])
            r = self.send("lookup", build_request("GET", f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={csid}",
                                                  0, user.token))
            if self.expect("lookup", r, {200}) and r.json.get("responseId") != rid:
                self.problem(f"lookup {csid}: responseId {r.json.get('responseId')} != {rid}")
        else:
            # Deliberate: a client id never sent is 404 / 1005.
            r = self.send("lookup unknown", build_request(
                "GET", f"/v1/orgs/{self.org.org_id}/responses?clientSubmissionId={new_id('never')}", 0, user.token))
            self.expect("lookup unknown", r, {(404, 1005)})

    def invalid(self, ci: int, user, rng, state: dict) -> None:
        # Deliberate: answers that break the survey's rules are 422 / 1002 and leave nothing.
        survey = self.org.plain_survey
        csid, body = self.submission_body(survey, rng, None)
        body["answers"]["n"] = -1 - rng.randrange(100)
        r = self.send("submit invalid", build_request("POST", f"/v1/orgs/{self.org.org_id}/responses", 0, user.token, body))
        self.expect("submit invalid", r, {(422, 1002)})

    def collector(self, ci: int) -> None:
        rng = random.Random(self.a.seed * 1000 + ci)
        user = self.org.collectors[ci]
        state = {"sent": [], "photos": {self.org.review_survey.version_id: [], self.org.plain_survey.version_id: []}}
        ops = [(self.submit, 46), (self.replay, 8), (self.upload, 12), (self.tus, 4), ("resubmit", 8),
               ("changes", 8), (self.lookup, 8), (self.invalid, 3)]
        fns, weights = zip(*ops)
        while not self.stop.is_set():
            op = rng.choices(fns, weights)[0]
            try:
                if op == "resubmit":
                    if not self.resubmit(ci, user, rng, state):
                        self.submit(ci, user, rng, state)
                elif op == "changes":
                    self.changes("changes", user.token, state)
                else:
                    op(ci, user, rng, state)
            except Exception as e:  # noqa: BLE001
                self.problem(f"collector {ci}: {type(e).__name__}: {e}")
            self.pause(rng)

    # -- the reviewer

    def step(self, who, rid: str, action: str, rev: int, rng, comment: Optional[str] = None) -> Optional[int]:
        body: dict[str, Any] = {"action": action, "expectedRevision": rev}
        if comment:
            body["comment"] = comment
        data = build_request("POST", f"/v1/orgs/{self.org.org_id}/responses/{rid}/review", 0, who.token,
                             body, headers={"Idempotency-Key": new_id("srv")})
        r = self.send("review", data)
        if not self.expect("review", r, {200}):
            return None
        new_rev = r.json["revision"]
        with self.lock:
            self.expected_events.add(("response.review", rid, new_rev))
        if rng.random() < 0.1:
            again = self.send("review replay", data)
            if self.expect("review replay", again, {200}):
                if again.header("idempotent-replayed") != "true" or again.json.get("revision") != new_rev:
                    self.problem(f"review replay {rid}: {again.header('idempotent-replayed')} {again.text[:160]}")
        return new_rev

    def reviewer(self, j: int) -> None:
        rng = random.Random(self.a.seed * 7 + j)
        who = self.org.reviewers[j]
        while not self.stop.is_set():
            try:
                rid, rev, ci = self.review_queue.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                rev2 = self.step(who, rid, "startReview", rev, rng)
                if rev2 is None:
                    continue
                if rng.random() < 0.05:
                    # Deliberate: a stale expectedRevision is 409 / 1021 and changes nothing.
                    r = self.send("review stale", build_request(
                        "POST", f"/v1/orgs/{self.org.org_id}/responses/{rid}/review", 0, who.token,
                        {"action": "approve", "expectedRevision": rev}, headers={"Idempotency-Key": new_id("srv")}))
                    self.expect("review stale", r, {(409, 1021)})
                x = rng.random()
                if x < 0.2 and rev2 < 8:
                    rev3 = self.step(who, rid, "returnForCorrection", rev2, rng, comment="Please recount the household.")
                    if rev3 is not None:
                        self.returned[ci].put((rid, rev3, "returned"))
                elif x < 0.3:
                    self.step(who, rid, "reject", rev2, rng, comment="Duplicate visit.")
                else:
                    self.step(who, rid, "approve", rev2, rng)
            except Exception as e:  # noqa: BLE001
                self.problem(f"reviewer: {type(e).__name__}: {e}")
            self.stop.wait(rng.uniform(0.0, self.a.pause / 2))

    # -- the admin: exports, console pages, the feed

    def sign_in(self) -> Optional[str]:
        body = urllib.parse.urlencode({"token": self.org.admin.token, "next": "/console/"}).encode()
        r = self.send("console sign-in", build_request("POST", "/console/sign-in", 0, body=body,
                                                        headers={"Content-Type": "application/x-www-form-urlencoded"}))
        if not self.expect("console sign-in", r, {303, 302}):
            return None
        cookie = (r.header("set-cookie") or "").split(";", 1)[0]
        if not cookie.startswith("surveyd_session="):
            self.problem(f"console sign-in: no session cookie ({r.header('set-cookie')})")
            return None
        return cookie

    def console_pages(self, rng) -> list[str]:
        o = self.org.org_id
        pages = ["/console/", f"/console/orgs/{o}/users", f"/console/orgs/{o}/surveys",
                 f"/console/orgs/{o}/tasks", f"/console/orgs/{o}/subscription", f"/console/orgs/{o}/webhooks",
                 f"/console/orgs/{o}/webhooks/{self.webhook_id}", f"/console/orgs/{o}/users/{self.org.collector.user_id}"]
        for s in (self.org.review_survey, self.org.plain_survey):
            pages += [f"/console/orgs/{o}/surveys/{s.survey_id}", f"/console/orgs/{o}/surveys/{s.survey_id}/responses",
                      f"/console/orgs/{o}/surveys/{s.survey_id}/exports"]
        with self.lock:
            recent = list(self.recent_rids)
        if recent:
            pages.append(f"/console/orgs/{o}/responses/{rng.choice(recent)}")
        return pages

    def export(self, survey, cursor: Optional[str]) -> Optional[str]:
        kind = "export csv" + (" incremental" if cursor else " full")
        q = f"?afterCursor={urllib.parse.quote(cursor)}" if cursor else ""
        r = self.send(kind, build_request("GET", f"/v1/orgs/{self.org.org_id}/surveys/{survey.survey_id}/responses.csv{q}",
                                          0, self.org.reviewer.token))
        if not self.expect(kind, r, {200}):
            return cursor
        nxt = r.header("surveyd-export-cursor")
        if not nxt:
            self.problem(f"{kind}: 200 without Surveyd-Export-Cursor")
            return cursor
        return nxt

    def admin(self) -> None:
        rng = random.Random(self.a.seed * 13)
        cookie = self.sign_in()
        signed_in = time.monotonic()
        cursors: dict[str, Optional[str]] = {}
        feed: dict = {}
        last_export = last_full = time.monotonic()
        i = 0
        while not self.stop.is_set():
            try:
                now = time.monotonic()
                if now - signed_in > 300:
                    # A fresh console session every 5 minutes, as people come and go.
                    cookie, signed_in = self.sign_in(), now
                if now - last_export > 10:
                    last_export = now
                    for s in (self.org.review_survey, self.org.plain_survey):
                        cursors[s.survey_id] = self.export(s, cursors.get(s.survey_id))
                if now - last_full > 120:
                    last_full = now
                    for s in (self.org.review_survey, self.org.plain_survey):
                        self.export(s, None)
                if cookie:
                    pages = self.console_pages(rng)
                    path = pages[i % len(pages)]
                    i += 1
                    r = self.send("console page", build_request("GET", path, 0, headers={"Cookie": cookie}))
                    if self.expect("console page", r, {200}) and b"<html" not in r.body[:2000].lower():
                        self.problem(f"console page {path}: 200 without a page")
                if i % 4 == 0:
                    self.changes("changes (admin)", self.org.admin.token, feed)
            except Exception as e:  # noqa: BLE001
                self.problem(f"admin: {type(e).__name__}: {e}")
            self.pause(rng)

    # -- sampling

    def proc_sample(self) -> dict:
        pid = self.server.pid
        out: dict[str, Any] = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    out["rss_mb"] = int(line.split()[1]) / 1024.0
                elif line.startswith("Threads:"):
                    out["threads"] = int(line.split()[1])
        # A sample's descriptors are the least of five reads 50 ms apart: a connection being served
        # at that instant is open in one read and gone in the next, a leaked descriptor is in all five.
        reads = []
        for k in range(5):
            reads.append(len(os.listdir(f"/proc/{pid}/fd")))
            if k < 4:
                time.sleep(0.05)
        out["fds"], out["fds_raw"] = min(reads), reads[0]
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return out

    def thread_names(self) -> dict:
        names: collections.Counter = collections.Counter()
        for tid in os.listdir(f"/proc/{self.server.pid}/task"):
            try:
                with open(f"/proc/{self.server.pid}/task/{tid}/comm") as f:
                    names[f.read().strip()] += 1
            except OSError:
                pass
        return dict(sorted(names.items()))

    def data_mb(self) -> float:
        total = 0
        for dp, _, fns in os.walk(self.server.data_dir):
            for fn in fns:
                try:
                    total += os.lstat(os.path.join(dp, fn)).st_blocks * 512
                except OSError:
                    pass
        return total / (1 << 20)

    def sampler(self) -> None:
        last_t = time.monotonic()
        last_cpu = self.proc_sample()["cpu_s"]
        last_req = 0
        lat_i = 0
        while not self.stop.wait(max(0.0, self.t0 + SAMPLE_SECONDS * (len(self.samples) + 1) - time.monotonic())):
            now = time.monotonic()
            p = self.proc_sample()
            with self.lock:
                window = [l for _, l in self.sub_lat[lat_i:]]
                lat_i = len(self.sub_lat)
                reqs = sum(self.counts.values())
                unexpected = self.unexpected
            s = {"t": round(now - self.t0, 1), "rss_mb": round(p["rss_mb"], 1), "fds": p["fds"], "fds_raw": p["fds_raw"],
                 "threads": p["threads"],
                 "cpu_pct": round(100 * (p["cpu_s"] - last_cpu) / (now - last_t), 1),
                 "data_mb": round(self.data_mb(), 1), "load1": float(open("/proc/loadavg").read().split()[0]),
                 "req_s": round((reqs - last_req) / (now - last_t), 1), "subs": len(window),
                 "p50_ms": round(1000 * pct(window, 50), 1) if window else None,
                 "p99_ms": round(1000 * pct(window, 99), 1) if window else None,
                 "webhooks": len(self.receiver.received()), "unexpected": unexpected}
            self.samples.append(s)
            if len(self.samples) in (1, int(self.a.minutes * 60 / 3 / SAMPLE_SECONDS)) or self.stop.is_set():
                self.thread_names_at[s["t"]] = self.thread_names()
            last_t, last_cpu, last_req = now, p["cpu_s"], reqs
            log("sample " + " ".join(f"{k}={v}" for k, v in s.items()))

    # -- the run

    def run(self) -> int:
        a = self.a
        self.server = ServerProcess.fresh("soak", binary=a.binary, extra_args=["--webhooks-allow-private"])
        self.receiver = Receiver()
        self.server.start()
        log(f"surveyd {a.binary} pid {self.server.pid} on port {self.server.port}, data {self.server.data_dir}")
        self.org = seed_org(self.server, "Soak team", collectors=a.collectors, reviewers=2)
        self.client = Client(self.server.port, timeout=30.0)
        self.returned = {i: queue.Queue() for i in range(a.collectors)}
        wh = self.client.post(f"/v1/orgs/{self.org.org_id}/webhooks", token=self.org.admin.token, json={
            "url": f"http://127.0.0.1:{self.receiver.port}/hooks",
            "events": ["response.accepted", "response.review", "response.resubmitted", "upload.completed", "task.completed"],
            "description": "soak receiver"})
        if wh.status != 201:
            raise RuntimeError(f"webhook: {wh.status} {wh.text}")
        self.webhook_id = wh.json["webhookId"]
        secret = wh.json["secret"]
        self.receiver.secret = base64.b64decode(secret.split("_", 1)[1])
        time.sleep(1.0)
        idle_before = self.proc_sample()
        log(f"idle before the load: rss {idle_before['rss_mb']:.1f} MB, fds {idle_before['fds']}, threads {idle_before['threads']}")

        self.t0 = time.monotonic()
        started = datetime.now(timezone.utc)
        threads = [threading.Thread(target=self.collector, args=(i,), daemon=True) for i in range(a.collectors)]
        threads += [threading.Thread(target=self.reviewer, args=(j,), daemon=True) for j in range(2)]
        threads += [threading.Thread(target=self.admin, daemon=True)]
        sampler = threading.Thread(target=self.sampler, daemon=True)
        for t in threads:
            t.start()
        sampler.start()
        try:
            end = self.t0 + a.minutes * 60
            while time.monotonic() < end:
                time.sleep(min(5.0, max(0.0, end - time.monotonic())))
                if not self.server.running:
                    self.problem("surveyd exited: " + self.server.tail_log(500))
                    break
        finally:
            self.stop.set()
            for t in threads:
                t.join(timeout=60)
            sampler.join(timeout=30)
        load_seconds = time.monotonic() - self.t0

        # Every event of a 2xx must reach the receiver (the first attempt comes within about a second).
        deadline = time.monotonic() + 120
        missing = self.expected_events - self.receiver.received()
        while missing and time.monotonic() < deadline:
            time.sleep(1.0)
            missing = self.expected_events - self.receiver.received()
        log(f"load stopped after {load_seconds:.0f} s; webhook events of 2xx answers not yet received: {len(missing)} "
            f"of {len(self.expected_events)}")
        # Past the blocking pool's 10 s of idleness, so its threads have ended and what is left is
        # what the load left behind.
        time.sleep(15.0)
        idle_after = self.proc_sample() if self.server.running else {}
        self.thread_names_after = self.thread_names() if self.server.running else {}
        term = self.server.terminate()
        # `surveyd check` reads every blob and row: on half a gigabyte, with other work on the
        # machine, it takes minutes. Whatever it does, the figures above are written out.
        log(f"surveyd stopped (exit {term}); surveyd check on {self.data_mb():.0f} MB")
        try:
            rc, report = self.server.check(timeout=a.check_timeout)
        except subprocess.TimeoutExpired:
            rc, report = None, f"did not finish within {a.check_timeout:.0f} s"
        return self.finish(started, load_seconds, missing, idle_before, idle_after, term, rc, report)

    # -- verdicts and results

    def finish(self, started, load_seconds, missing, idle_before, idle_after, term, check_rc, check_report) -> int:
        a = self.a
        dur = a.minutes * 60
        # The windows scale with the run: at 30 minutes the mark is 10 minutes in and the flat
        # window the last 10; the p99 windows are the first and last 5 minutes.
        mark_t = min(600.0, dur / 3)
        flat_from = max(mark_t, dur - 600.0) if dur >= 1800 else dur - dur / 3
        p99_w = min(300.0, dur / 6)
        samples = self.samples
        mark = min(samples, key=lambda s: abs(s["t"] - mark_t)) if samples else None
        window = [s for s in samples if s["t"] >= flat_from - 0.01]
        lines: list[str] = []
        ok_all = True

        def verdict(ok: bool, text: str) -> None:
            nonlocal ok_all
            ok_all = ok_all and ok
            lines.append(f"{'PASS' if ok else 'FAIL'}  {text}")

        if mark and window:
            m = mark["rss_mb"]
            lo, hi = min(s["rss_mb"] for s in window), max(s["rss_mb"] for s in window)
            verdict(0.9 * m <= lo and hi <= 1.1 * m,
                    f"RSS flat: {lo:.1f}–{hi:.1f} MB over t≥{flat_from:.0f}s vs {m:.1f} MB at t={mark['t']:.0f}s "
                    f"({100 * (hi / m - 1):+.1f} % at most; limit ±10 %)")
            for k, name in (("fds", "descriptors"), ("threads", "threads")):
                mv, hv = mark[k], max(s[k] for s in window)
                verdict(hv <= 1.1 * mv, f"{name} flat: max {hv} over t≥{flat_from:.0f}s vs {mv} at t={mark['t']:.0f}s "
                                         f"({100 * (hv / mv - 1):+.1f} %; limit +10 %)")
        else:
            verdict(False, "too few samples for the flatness verdicts")
        with self.lock:
            lat = list(self.sub_lat)
        first = [l for t, l in lat if t - self.t0 <= p99_w]
        last = [l for t, l in lat if t - self.t0 >= load_seconds - p99_w]
        p1, p2 = pct(first, 99), pct(last, 99)
        if p1 and p2:
            verdict(p2 <= 1.5 * p1, f"submission p99: last {p99_w:.0f}s {1000 * p2:.1f} ms ({len(last)} submissions) vs "
                                    f"first {p99_w:.0f}s {1000 * p1:.1f} ms ({len(first)}); ratio {p2 / p1:.2f} (limit 1.5)")
        else:
            verdict(False, "no submission latencies")
        verdict(self.unexpected == 0, f"unexpected answers: {self.unexpected}")
        got = self.receiver.received()
        extra = got - self.expected_events
        verdict(not missing and self.receiver.bad_signatures == 0,
                f"webhook events delivered: {len(self.expected_events) - len(missing)} of {len(self.expected_events)} "
                f"({self.receiver.deliveries} deliveries, {len(got)} distinct events, {len(extra)} not from an answer "
                f"this client saw, {self.receiver.bad_signatures} bad signatures)")
        verdict(check_rc == 0, f"surveyd check after the run: exit {check_rc}" + ("" if check_rc is not None else f" ({check_report})"))

        by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for (kind, st), n in self.counts.items():
            by_kind[kind][st] += n
        total = sum(self.counts.values())
        cpu = [s["cpu_pct"] for s in samples]
        loads = [s["load1"] for s in samples]
        out = []
        out.append(f"soak of {a.minutes} min, started {started.strftime('%Y-%m-%d %H:%M:%S')} UTC; {a.binary}")
        out.append(f"{a.collectors} collectors, 2 reviewers, 1 admin; pause {a.pause:.2f}s (±50 %) between operations")
        out.append(f"{total} requests ({total / load_seconds:.1f}/s), {len(lat)} new submissions "
                   f"({len(lat) / load_seconds:.1f}/s); server CPU mean {sum(cpu) / max(1, len(cpu)):.1f} %, "
                   f"max {max(cpu, default=0):.1f} % of one core; load average (1 min) {min(loads, default=0):.2f}–"
                   f"{max(loads, default=0):.2f}, mean {sum(loads) / max(1, len(loads)):.2f}")
        out.append("answers: " + "; ".join(f"{k} " + ", ".join(f"{s}×{n}" for s, n in sorted(c.items(), key=str))
                                             for k, c in sorted(by_kind.items())))
        if idle_after:
            out.append(f"idle before the load: rss {idle_before['rss_mb']:.1f} MB, fds {idle_before['fds']}, threads "
                       f"{idle_before['threads']}; idle after it (deliveries drained): rss {idle_after['rss_mb']:.1f} MB, "
                       f"fds {idle_after['fds']}, threads {idle_after['threads']}")
        for t, names in list(self.thread_names_at.items()) + [("idle after", self.thread_names_after)]:
            out.append(f"threads by name at {t}: " + ", ".join(f"{k}×{v}" for k, v in names.items()))
        out.append(f"SIGTERM exit status {term}; surveyd check: {check_report.strip().splitlines()[-1] if check_report.strip() else ''}")
        out.append("")
        cols = ["t", "rss_mb", "fds", "fds_raw", "threads", "cpu_pct", "data_mb", "load1", "req_s", "subs", "p50_ms", "p99_ms",
                "webhooks", "unexpected"]
        out.append(" ".join(f"{c:>10}" for c in cols))
        for s in samples:
            out.append(" ".join(f"{('-' if s[c] is None else s[c]):>10}" for c in cols))
        out.append("")
        out.extend(lines)
        if self.examples:
            out.append("first unexpected answers:")
            out.extend("  " + e for e in self.examples)
        if missing:
            out.append("first missing webhook events: " + ", ".join(map(str, sorted(missing, key=str)[:10])))
        text = "\n".join(out)
        print(text, flush=True)
        os.makedirs(os.path.dirname(os.path.abspath(a.results)), exist_ok=True)
        with open(a.results, "w") as f:
            f.write(text + "\n")
        with open(a.results + ".json", "w") as f:
            json.dump({"minutes": a.minutes, "samples": samples, "verdicts": lines}, f)
        plot(a.results + ".json", a.plot)
        log(f"results in {a.results}, samples in {a.results}.json, plot {a.plot}; data dir {self.server.data_dir}")
        if ok_all and not a.keep:
            self.server.remove()
        return 0 if ok_all else 1


# ---------------------------------------------------------------------------------------------
# The plot (matplotlib, from .build/venv-soak when this interpreter has none)


def plot(samples_json: str, png: str) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        venv = os.path.dirname(os.path.dirname(VENV_PYTHON))
        if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
            subprocess.run([VENV_PYTHON, os.path.abspath(__file__), "--plot-only", samples_json, png], check=False)
        else:
            log("no matplotlib (python3 -m venv .build/venv-soak && .build/venv-soak/bin/pip install matplotlib): no plot")
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(samples_json) as f:
        d = json.load(f)
    s = d["samples"]
    t = [x["t"] / 60 for x in s]
    fig, axes = plt.subplots(5, 1, figsize=(9, 11), sharex=True)
    series = [("rss_mb", "RSS (MB)"), ("fds", "open descriptors"), ("threads", "threads"), ("p99_ms", "submission p99 (ms)"),
              ("cpu_pct", "server CPU (% of a core)")]
    for ax, (k, label) in zip(axes, series):
        ax.plot(t, [x[k] if x[k] is not None else float("nan") for x in s], lw=1.2)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[3].plot(t, [x["p50_ms"] if x["p50_ms"] is not None else float("nan") for x in s], lw=0.8, alpha=0.7, label="p50")
    axes[3].legend(["p99", "p50"], loc="upper left")
    axes[-1].set_xlabel("minutes")
    fig.suptitle(d.get("title") or f"surveyd soak, {d['minutes']:g} min of mixed load (10 s samples)")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    log(f"plot {png}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--collectors", type=int, default=4)
    p.add_argument("--pause", type=float, default=0.2, help="mean seconds each client thread waits between operations")
    p.add_argument("--seed", type=int, default=int(os.environ.get("HARNESS_SEED", "2026")))
    p.add_argument("--binary", default=os.environ.get("SURVEYD_BIN") or DEFAULT_BIN)
    p.add_argument("--results", default=os.path.join(REPO_ROOT, ".build/soak/results.txt"))
    p.add_argument("--plot", default=os.path.join(REPO_ROOT, ".build/soak/soak.png"))
    p.add_argument("--check-timeout", type=float, default=1800, help="seconds `surveyd check` may take after the run")
    p.add_argument("--keep", action="store_true", help="keep the data dir of a passing run")
    p.add_argument("--plot-only", nargs=2, metavar=("SAMPLES_JSON", "PNG"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.plot_only:
        plot(*a.plot_only)
        return 0
    if not os.path.exists(a.binary):
        print(f"no surveyd at {a.binary}: build it (swift build -c release --product surveyd --scratch-path "
              f"/tmp/wt-m-release) or set SURVEYD_BIN / --binary", file=sys.stderr)
        return 2
    a.binary = os.path.abspath(a.binary)
    return Soak(a).run()


if __name__ == "__main__":
    sys.exit(main())
