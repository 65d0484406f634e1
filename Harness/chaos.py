#!/usr/bin/env python3
"""The chaos test: concurrent collectors, reviewers and an admin against a real surveyd that is
killed with SIGKILL at random moments and restarted, while the organization's subscription is
flipped between expired and active every few milliseconds.

Every client keeps a ledger of its logical operations. An operation is one request whose bytes
never change: a retry resends the identical bytes (same clientSubmissionId / clientUploadId /
Idempotency-Key, same body). An operation ends
  ok         — it got a 2xx (the ids of the answer are recorded),
  abandoned  — it got 1001 and the client decided never to retry it (a random 20% of 1001s),
  refused    — a definitive refusal the workflow allows (1020/1021/1022 in a review race),
  unresolved — no definitive answer before the time bound (a violation).

Afterwards, on the stopped server's SQLite file (read-only) and with `surveyd check`:
  every ok operation is present with the same ids and bytes; no client id twice; every abandoned
  operation left no trace (no row, no idempotency record); every response's revision and review
  state are those of the last ok review step; and `surveyd check --data-dir` exits 0.

  python3 Harness/chaos.py                 # short form: 10 kill cycles
  python3 Harness/chaos.py --long          # long form: 60 kill cycles, more clients
  python3 Harness/chaos.py --cycles 25 --time-limit 300 --seed 7
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surveyd_client import (FILE_QUESTION, Checks, Client, HTTPFailure, Org, Reply, ServerProcess, build_request,  # noqa: E402
                            db_connect, iso_in, jpeg, log, new_id, seed_org, sha256_hex)

RETRYABLE_STATUS = {429, 500, 502, 503, 504}


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.c: dict[str, int] = {}
        self.violations: list[str] = []

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.c[key] = self.c.get(key, 0) + n

    def get(self, key: str) -> int:
        return self.c.get(key, 0)

    def violation(self, msg: str) -> None:
        with self.lock:
            self.violations.append(msg)
        log(f"VIOLATION: {msg}")


@dataclass
class Op:
    kind: str                      # submit | upload | review | resubmit | task | subscription
    actor: str                     # user id (or "operator")
    key: str                       # clientSubmissionId, clientUploadId or Idempotency-Key
    method: str
    path: str
    data: bytes                    # the exact request bytes, resent unchanged on every retry
    target: str = ""               # responseId for review/resubmit
    meta: dict = field(default_factory=dict)
    outcome: str = "pending"
    status: int = 0
    code: Optional[int] = None
    answer: Any = None
    attempts: int = 0
    ambiguous: int = 0             # attempts without a complete answer
    timeouts: int = 0
    started: float = 0.0
    finished: float = 0.0


class Harness:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rng = random.Random(args.seed)
        self.stats = Stats()
        self.stop = threading.Event()          # workers stop starting new operations
        self.chaos_over = threading.Event()    # killer and flipper are done
        self.servers = self.make_servers()
        self.server = self.servers[0]          # seeding, `surveyd check`, the final reconciliation
        self.server_lock = threading.Lock()
        self.ops: list[Op] = []
        self.ops_lock = threading.Lock()
        self.org: Optional[Org] = None
        self.tasks: list[dict] = []            # tasks created (ok)
        self.tasks_lock = threading.Lock()
        self.backups: list[dict] = []
        self.kill_times: list[float] = []
        self.post_kill_checks: list[dict] = []  # `surveyd check` on a killed server's data dir, before the restart

    # -- the servers and the database (a subclass runs several processes on PostgreSQL) -----

    def make_servers(self) -> list[ServerProcess]:
        return [ServerProcess.fresh("chaos")]

    def start_servers(self) -> None:
        for s in self.servers:
            s.start()

    def stop_servers(self) -> int:
        """SIGTERM to each; the first non-zero exit status, else 0."""
        rcs = [s.terminate() for s in self.servers]
        return next((rc for rc in rcs if rc != 0), 0)

    @contextlib.contextmanager
    def database(self):
        """A query function on the stopped server's database, read-only."""
        conn = db_connect(self.server.db_path)
        try:
            yield lambda sql, args=(): conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def backup_command(self, dest: str) -> list[str]:
        return [self.server.binary, "backup", "--data-dir", self.server.data_dir, "--to", dest]

    check_name = "surveyd check --data-dir exits 0"

    def after_seed(self) -> None:
        """Runs once the organization exists, before the clients start."""

    def after_drain(self, checks: Checks) -> None:
        """Runs after the clients are done, before the servers stop."""

    def describe(self) -> str:
        return f"data dir {self.server.data_dir}"

    def cleanup(self) -> None:
        for s in self.servers:
            s.remove()

    # -- transport -------------------------------------------------------------------------

    def client(self, timeout: float = 20.0) -> Client:
        return Client(self.server.port, timeout=timeout)

    def honest_unavailable(self, what: str, r: Reply) -> None:
        """503 is the one way to say "cannot write now": 1040 with Retry-After, nothing else."""
        if (r.status == 503 or r.error_code == 1040) and not (r.status == 503 and r.error_code == 1040 and r.header("retry-after")):
            self.stats.violation(f"{what}: {r.status} errorCode {r.error_code} Retry-After {r.header('retry-after')!r}")
        if r.error_code == 1040:
            self.stats.add("unavailable_1040")

    def read(self, path: str, token: str) -> Optional[Reply]:
        """A read (never gated): one attempt; None when the server is down."""
        self.stats.add("requests")
        try:
            r = self.client(10.0).get(path, token=token)
        except HTTPFailure:
            self.stats.add("faults_seen")
            return None
        self.stats.add(f"status_{r.status // 100}xx")
        if r.status >= 500 and r.error_code != 1040:
            self.stats.violation(f"GET {path} answered {r.status} {r.text[:200]}")
        self.honest_unavailable(f"GET {path}", r)
        return r

    def perform(self, op: Op, rng: random.Random, abandonable: bool = True,
                allowed_refusals: frozenset = frozenset()) -> Op:
        """Sends op.data until a definitive answer (see the module doc)."""
        op.started = time.monotonic()
        deadline = op.started + self.args.op_timeout
        backoff = 0.01
        while True:
            if time.monotonic() > deadline:
                op.outcome = "unresolved"
                self.stats.violation(f"{op.kind} {op.key}: no definitive answer after {op.attempts} attempts "
                                     f"(last {op.status} {op.code})")
                break
            op.attempts += 1
            self.stats.add("requests")
            try:
                r = self.client(self.args.request_timeout).send_raw(op.data, head_only=op.method == "HEAD")
            except HTTPFailure as e:
                op.ambiguous += 1
                self.stats.add("faults_seen")
                if "timed out" in str(e):
                    op.timeouts += 1
                    self.stats.add("timeouts")
                time.sleep(backoff + rng.random() * backoff)
                backoff = min(backoff * 2, 0.2)
                continue
            op.status, op.code = r.status, r.error_code
            self.stats.add(f"status_{r.status // 100}xx")
            self.honest_unavailable(f"{op.kind} {op.key}", r)
            if 200 <= r.status < 300:
                op.outcome = "ok"
                op.answer = r.json
                op.meta["replayed"] = r.header("idempotent-replayed") == "true"
                self.stats.add("ok_2xx")
                if op.meta["replayed"]:
                    self.stats.add("replays")
                break
            if r.error_code == 1001:
                self.stats.add("refused_1001")
                # A request that may still be running on the server (a client timeout) is never
                # abandoned: its outcome would be unknown, not absent.
                if abandonable and op.timeouts == 0 and rng.random() < self.args.abandon_rate:
                    op.outcome = "abandoned"
                    self.stats.add("abandoned")
                    break
                time.sleep(0.005 + rng.random() * 0.03)
                continue
            if r.status in RETRYABLE_STATUS or r.error_code in (1030, 1040, 1099):
                if r.status == 500 or r.error_code == 1099:
                    self.stats.violation(f"{op.kind} {op.key}: 500 {r.text[:300]}")
                self.stats.add(f"retryable_{r.status}")
                time.sleep(backoff + rng.random() * backoff)
                backoff = min(backoff * 2, 0.2)
                continue
            if r.error_code in allowed_refusals:
                op.outcome = "refused"
                self.stats.add(f"refused_{r.error_code}")
                break
            op.outcome = "unexpected"
            self.stats.violation(f"{op.kind} {op.key} (attempt {op.attempts}, {op.ambiguous} ambiguous before): "
                                 f"unexpected {r.status} {r.text[:300]}")
            break
        op.finished = time.monotonic()
        with self.ops_lock:
            self.ops.append(op)
        return op

    # -- operations ------------------------------------------------------------------------

    def op_submit(self, user, survey, answers: dict, rng: random.Random, task_id: Optional[str] = None) -> Op:
        org = self.org
        csid = new_id("sub")
        body = {"clientSubmissionId": csid, "surveyVersionId": survey.version_id, "contentHash": survey.content_hash,
                "answers": answers, "capturedAt": iso_in(-rng.randint(60, 86400 * 3))}
        if task_id:
            body["fieldTaskId"] = task_id
        path = f"/v1/orgs/{org.org_id}/responses"
        data = build_request("POST", path, 0, user.token, body)
        op = Op("submit", user.user_id, csid, "POST", path, data, meta={"survey": survey.survey_id, "task": task_id,
                                                                        "review": survey.review_required, "answers": answers})
        return self.perform(op, rng, allowed_refusals=frozenset({1022}))

    def op_upload(self, user, survey, rng: random.Random) -> Op:
        org = self.org
        cuid = new_id("upl")
        size = rng.choice([2048, 8192, 30_000, 120_000]) if rng.random() < 0.9 else rng.choice([1 << 20, 3 << 20])
        content = jpeg(size, seed=rng.randrange(1 << 30))
        headers = {"Content-Type": "image/jpeg", "Survey-Version-Id": survey.version_id, "Question-Id": FILE_QUESTION}
        if rng.random() < 0.5:
            headers["Content-Digest"] = "sha-256=:" + base64.b64encode(hashlib.sha256(content).digest()).decode() + ":"
        path = f"/v1/orgs/{org.org_id}/uploads/{cuid}"
        data = build_request("PUT", path, 0, user.token, body=content, headers=headers)
        op = Op("upload", user.user_id, cuid, "PUT", path, data,
                meta={"sha256": sha256_hex(content), "size": len(content), "version": survey.version_id})
        return self.perform(op, rng)

    def op_review(self, reviewer, response_id: str, action: str, revision: int, rng: random.Random) -> Op:
        org = self.org
        key = new_id("rev")
        body: dict = {"action": action, "expectedRevision": revision}
        if action in ("returnForCorrection", "reject"):
            body["comment"] = rng.choice(["photo is blurred", "count looks wrong", "wrong site"])
        path = f"/v1/orgs/{org.org_id}/responses/{response_id}/review"
        data = build_request("POST", path, 0, reviewer.token, body, headers={"Idempotency-Key": key if rng.random() < 0.5 else f'"{key}"'})
        op = Op("review", reviewer.user_id, key, "POST", path, data, target=response_id,
                meta={"action": action, "expected": revision})
        return self.perform(op, rng, allowed_refusals=frozenset({1020, 1021, 1022}))

    def op_resubmit(self, user, response_id: str, revision: int, survey, rng: random.Random, photo: Optional[str]) -> Op:
        org = self.org
        key = new_id("rsb")
        answers = {"n": rng.randint(0, 1000), "notes": "corrected"}
        if photo:
            answers[FILE_QUESTION] = {"clientUploadId": photo}
        body = {"expectedRevision": revision, "surveyVersionId": survey.version_id, "contentHash": survey.content_hash,
                "answers": answers}
        path = f"/v1/orgs/{org.org_id}/responses/{response_id}/resubmit"
        data = build_request("POST", path, 0, user.token, body, headers={"Idempotency-Key": key})
        op = Op("resubmit", user.user_id, key, "POST", path, data, target=response_id,
                meta={"expected": revision, "answers": answers})
        return self.perform(op, rng, allowed_refusals=frozenset({1020, 1021}))

    def op_task(self, rng: random.Random) -> Op:
        org = self.org
        key = new_id("tsk")
        assignee = rng.choice(org.collectors)
        survey = rng.choice([org.review_survey, org.plain_survey])
        body = {"title": f"Visit site {rng.randint(1, 999)}", "surveyId": survey.survey_id, "assigneeUserId": assignee.user_id,
                "dueAt": iso_in(86400 * 7)}
        path = f"/v1/orgs/{org.org_id}/tasks"
        data = build_request("POST", path, 0, org.admin.token, body, headers={"Idempotency-Key": key})
        op = Op("task", org.admin.user_id, key, "POST", path, data, meta={"assignee": assignee.user_id, "survey": survey.survey_id})
        self.perform(op, rng)
        if op.outcome == "ok":
            with self.tasks_lock:
                self.tasks.append({"taskId": op.answer["taskId"], "assignee": assignee.user_id, "survey": survey})
        return op

    # -- workers ---------------------------------------------------------------------------

    def collector_worker(self, idx: int) -> None:
        org = self.org
        user = org.collectors[idx]
        rng = random.Random(self.args.seed * 1000 + idx)
        mine: list[Op] = []            # my ok submissions
        review_mine: list[Op] = []     # ... of the review-required survey
        cited_tasks: set[str] = set()
        while not self.stop.is_set():
            r = rng.random()
            if r < 0.50:
                survey = org.review_survey if rng.random() < 0.6 else org.plain_survey
                answers: dict = {"n": rng.randint(0, 5000), "notes": f"site {rng.randint(1, 99)}"}
                if survey is org.review_survey:
                    answers["source"] = rng.choice(["well", "piped", "river"])
                if rng.random() < 0.3:
                    up = self.op_upload(user, survey, rng)
                    if up.outcome == "ok":
                        answers[FILE_QUESTION] = {"clientUploadId": up.key}
                task_id = None
                if rng.random() < 0.25:
                    with self.tasks_lock:
                        open_tasks = [t for t in self.tasks if t["assignee"] == user.user_id and t["survey"] is survey
                                      and t["taskId"] not in cited_tasks]
                    if open_tasks:
                        task_id = rng.choice(open_tasks)["taskId"]
                        cited_tasks.add(task_id)
                op = self.op_submit(user, survey, answers, rng, task_id)
                if op.outcome == "ok":
                    mine.append(op)
                    if survey is org.review_survey:
                        review_mine.append(op)
            elif r < 0.65:
                self.op_upload(user, rng.choice([org.review_survey, org.plain_survey]), rng)
            elif r < 0.90 and review_mine:
                sub = rng.choice(review_mine)
                rid = sub.answer["responseId"]
                cur = self.read(f"/v1/orgs/{org.org_id}/responses/{rid}", user.token)
                if cur is None or cur.status != 200:
                    time.sleep(0.02)
                    continue
                if cur.json["reviewState"] == "returned":
                    photo = None
                    if rng.random() < 0.3:
                        up = self.op_upload(user, org.review_survey, rng)
                        photo = up.key if up.outcome == "ok" else None
                    self.op_resubmit(user, rid, cur.json["revision"], org.review_survey, rng, photo)
                else:
                    time.sleep(0.005)
            elif mine:
                # Resend an accepted submission's exact bytes: the same receipt, nothing new.
                old = rng.choice(mine)
                again = Op("replay", user.user_id, old.key, old.method, old.path, old.data, meta={"of": old.answer["responseId"]})
                self.perform(again, rng, abandonable=False)
                if again.outcome == "ok":
                    if again.status != 200 or again.answer.get("responseId") != old.answer["responseId"]:
                        self.stats.violation(f"replay of {old.key} answered {again.status} {again.answer} "
                                             f"(first answer {old.answer['responseId']})")
                    else:
                        self.stats.add("replays_checked")

    def reviewer_worker(self, idx: int) -> None:
        org = self.org
        reviewer = org.reviewers[idx]
        rng = random.Random(self.args.seed * 2000 + idx)
        while not self.stop.is_set():
            state = rng.choice(["submitted", "in_review", "in_review"])
            lst = self.read(f"/v1/orgs/{org.org_id}/responses?reviewState={state}&limit=50", reviewer.token)
            if lst is None or lst.status != 200:
                time.sleep(0.02)
                continue
            items = lst.json.get("items") or []
            if not items:
                time.sleep(0.02)
                continue
            item = rng.choice(items)
            if state == "submitted":
                action = "startReview"
            else:
                action = rng.choices(["approve", "returnForCorrection", "reject"], weights=[5, 4, 1])[0]
            self.op_review(reviewer, item["responseId"], action, int(item["revision"]), rng)

    def admin_worker(self) -> None:
        rng = random.Random(self.args.seed * 3000)
        while not self.stop.is_set():
            self.op_task(rng)
            self.stop.wait(rng.uniform(0.1, 0.4))

    def flipper(self) -> None:
        """Flips the subscription every few milliseconds (PUT as operator, never gated)."""
        org = self.org
        rng = random.Random(self.args.seed * 4000)
        active = False
        path = f"/v1/orgs/{org.org_id}/subscription"
        while not self.chaos_over.is_set():
            body = {"expiresAt": iso_in(86400) if active else iso_in(-60)}
            self.stats.add("requests")
            try:
                r = self.client(5.0).put(path, token=org.operator, json=body)
                if r.status == 200:
                    self.stats.add("flips")
                    active = not active
                elif r.error_code == 1040:
                    self.honest_unavailable("PUT subscription", r)
                else:
                    self.stats.violation(f"PUT subscription answered {r.status} {r.text[:200]}")
            except HTTPFailure:
                self.stats.add("faults_seen")
            time.sleep(rng.uniform(0.002, 0.012) if not active else rng.uniform(0.004, 0.02))

    def killer(self) -> None:
        rng = random.Random(self.args.seed * 5000)
        t_end = self.t0 + self.args.time_limit * 0.7
        while self.stats.get("kills") < self.args.cycles and time.monotonic() < t_end:
            time.sleep(rng.uniform(self.args.min_up, self.args.max_up))
            if self.backup_due(rng):
                self.take_backup()
            with self.server_lock:
                self.server.kill9()
                self.stats.add("kills")
                self.kill_times.append(time.monotonic() - self.t0)
                if len(self.post_kill_checks) < self.args.check_after_kill and self.has_command("check") \
                        and rng.random() < max(0.2, self.args.check_after_kill / max(1, self.args.cycles)):
                    rc, report = self.server.check()
                    self.post_kill_checks.append({"cycle": self.stats.get("kills"), "exit": rc,
                                                  "violations": [l.strip() for l in report.splitlines() if "VIOLATION" in l][:5],
                                                  "notes": [l.strip() for l in report.splitlines() if "note:" in l][:3]})
                time.sleep(rng.uniform(0.0, 0.15))
                self.server.start()
                self.stats.add("restarts")
            if self.stats.get("kills") % 10 == 0:
                log(f"chaos: {self.stats.get('kills')} kill cycles, {self.stats.get('requests')} requests, "
                    f"{self.stats.get('ok_2xx')} 2xx, {self.stats.get('refused_1001')} 1001s")
        self.chaos_over.set()

    # -- online backups while the chaos runs ----------------------------------------------

    def backup_due(self, rng: random.Random) -> bool:
        if not self.args.backups or len(self.backups) >= self.args.backups or not self.has_command("backup"):
            return False
        k = self.stats.get("kills")
        return k >= 2 and k % max(1, self.args.cycles // (self.args.backups + 1)) == 0

    def take_backup(self) -> None:
        dest = self.server.data_dir + f"-backup{len(self.backups) + 1}"
        with self.ops_lock:
            done_before = [op for op in self.ops if op.outcome == "ok" and op.kind in ("submit", "upload")]
        t = time.monotonic()
        r = subprocess.run(self.backup_command(dest), capture_output=True, timeout=120)
        self.backups.append({"dest": dest, "rc": r.returncode, "out": (r.stdout + r.stderr).decode(errors="replace"),
                             "before": done_before, "seconds": time.monotonic() - t})
        log(f"chaos: online backup {len(self.backups)} -> rc {r.returncode} in {time.monotonic() - t:.2f}s")

    _commands: dict[str, bool] = {}

    def has_command(self, name: str) -> bool:
        if name not in self._commands:
            r = subprocess.run([self.server.binary, "help"], capture_output=True)
            self._commands[name] = f"surveyd {name}" in r.stdout.decode(errors="replace")
        return self._commands[name]

    # -- run -------------------------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        checks = Checks("chaos")
        log(f"chaos: binary {self.server.binary}; {self.describe()}; seed {a.seed}; "
            f"{a.cycles} kill cycles, {a.collectors} collectors, {a.reviewers} reviewers, time limit {a.time_limit}s")
        self.start_servers()
        self.org = seed_org(self.server, "Chaos team", collectors=a.collectors, reviewers=a.reviewers)
        self.after_seed()
        self.t0 = time.monotonic()
        workers = [threading.Thread(target=self.collector_worker, args=(i,), name=f"collector{i}") for i in range(a.collectors)]
        workers += [threading.Thread(target=self.reviewer_worker, args=(i,), name=f"reviewer{i}") for i in range(a.reviewers)]
        workers.append(threading.Thread(target=self.admin_worker, name="admin"))
        chaos = [threading.Thread(target=self.flipper, name="flipper"), threading.Thread(target=self.killer, name="killer")]
        for t in workers + chaos:
            t.daemon = True
            t.start()
        # The chaos phase ends when the killer has done its cycles (or the time bound says so).
        while not self.chaos_over.is_set() and time.monotonic() - self.t0 < a.time_limit * 0.75:
            time.sleep(0.1)
        self.chaos_over.set()
        for t in chaos:
            t.join(timeout=30)
        # Drain: renew, stop new operations, and let every operation in progress finish.
        self.stop.set()
        renewed = False
        for _ in range(200):
            try:
                if self.client(5.0).put(f"/v1/orgs/{self.org.org_id}/subscription", token=self.org.operator,
                                        json={"expiresAt": iso_in(86400 * 30)}).status == 200:
                    renewed = True
                    break
            except HTTPFailure:
                pass
            time.sleep(0.05)
        drain_deadline = time.monotonic() + max(30.0, a.time_limit - (time.monotonic() - self.t0))
        for t in workers:
            t.join(timeout=max(0.1, drain_deadline - time.monotonic()))
        stuck = [t.name for t in workers if t.is_alive()]
        chaos_seconds = time.monotonic() - self.t0
        log(f"chaos: phase over after {chaos_seconds:.1f}s; stopping the server")
        self.after_drain(checks)
        rc_term = self.stop_servers()

        ops = list(self.ops)
        figures = self.figures(ops, chaos_seconds)
        self.print_figures(figures)

        checks.check("kill cycles completed", self.stats.get("kills") >= a.cycles, f"{self.stats.get('kills')} of {a.cycles}")
        checks.check("subscription renewed for the drain", renewed)
        checks.check("every client finished its operations", not stuck, ", ".join(stuck))
        checks.check("SIGTERM after the run exits 0", rc_term == 0, f"exit {rc_term}")
        checks.check("some requests were refused with 1001 and some abandoned",
                     self.stats.get("refused_1001") > 0 and self.stats.get("abandoned") > 0,
                     f"{self.stats.get('refused_1001')} 1001s, {self.stats.get('abandoned')} abandoned")
        self.verify(ops, checks)
        self.verify_backups(checks)
        checks.check("no violation during the run", not self.stats.violations,
                     "; ".join(self.stats.violations[:5]) + (f" (+{len(self.stats.violations) - 5} more)"
                                                              if len(self.stats.violations) > 5 else ""))
        figures["violations"] = len(self.stats.violations) + checks.failed
        print(f"violations: {figures['violations']}")
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({**figures, "checks_passed": checks.passed, "checks_failed": checks.failed,
                           "violation_list": self.stats.violations[:50], "post_kill_checks": self.post_kill_checks,
                           "seed": a.seed, "args": vars(a)}, f, indent=2)
        if checks.failed == 0 and not a.keep:
            self.cleanup()
            for b in self.backups:
                shutil.rmtree(b["dest"], ignore_errors=True)
        else:
            log(f"chaos: kept: {self.describe()} (logs beside the data dirs: "
                + ", ".join(s.log_path for s in self.servers) + ")")
        return checks.finish()

    def figures(self, ops: list[Op], seconds: float) -> dict:
        s = self.stats
        by = lambda kind, outcome: sum(1 for o in ops if o.kind == kind and o.outcome == outcome)  # noqa: E731
        return {
            "seconds": round(seconds, 1), "cycles": s.get("kills"), "kills": s.get("kills"), "restarts": s.get("restarts"),
            "requests": s.get("requests"), "operations": len(ops),
            "faults": s.get("kills") + s.get("faults_seen"), "connection_faults_seen_by_clients": s.get("faults_seen"),
            "timeouts": s.get("timeouts"), "ok_2xx": s.get("ok_2xx"), "refused_1001": s.get("refused_1001"),
            "abandoned_1001": s.get("abandoned"), "replays": s.get("replays"), "replays_checked": s.get("replays_checked"),
            "subscription_flips": s.get("flips"),
            "submissions_ok": by("submit", "ok"), "uploads_ok": by("upload", "ok"), "reviews_ok": by("review", "ok"),
            "resubmits_ok": by("resubmit", "ok"), "tasks_ok": by("task", "ok"),
            "review_refusals_1020_1021_1022": sum(s.get(f"refused_{c}") for c in (1020, 1021, 1022)),
            "backups": len(self.backups),
            "startup_sweep": self.sweeps(),
            "checks_right_after_a_kill": len(self.post_kill_checks),
            "checks_right_after_a_kill_exit_1": sum(1 for c in self.post_kill_checks if c["exit"] != 0),
        }

    def sweeps(self) -> dict:
        """What the start-up sweep removed after the kills (temp files of interrupted uploads...)."""
        import re
        out = {"temp": 0, "blobs": 0, "partials": 0, "sweeping_starts": 0}
        logs = "".join(s.tail_log(10 << 20) for s in self.servers)
        for m in re.finditer(r"removed (\d+) temp, (\d+) unreferenced blob and (\d+) stale partial", logs):
            out["sweeping_starts"] += 1
            out["temp"] += int(m.group(1))
            out["blobs"] += int(m.group(2))
            out["partials"] += int(m.group(3))
        return out

    def print_figures(self, f: dict) -> None:
        print("chaos figures:")
        for k in ["seconds", "cycles", "kills", "requests", "operations", "faults", "connection_faults_seen_by_clients",
                  "ok_2xx", "refused_1001", "abandoned_1001", "replays", "subscription_flips", "submissions_ok", "uploads_ok",
                  "reviews_ok", "resubmits_ok", "tasks_ok", "review_refusals_1020_1021_1022", "backups", "startup_sweep",
                  "checks_right_after_a_kill", "checks_right_after_a_kill_exit_1"]:
            print(f"  {k}: {f[k]}")
        for c in self.post_kill_checks:
            if c["exit"] != 0 or c["notes"]:
                print(f"  check after kill {c['cycle']}: exit {c['exit']} {c['violations'] or ''} {c['notes'] or ''}")

    # -- verification ----------------------------------------------------------------------

    def verify(self, ops: list[Op], checks: Checks) -> None:
        self.verify_db(ops, checks)
        self.verify_files_and_check(ops, checks)
        self.self_test(ops, checks)

    def self_test(self, ops: list[Op], checks: Checks) -> None:
        """The verification verified: ledgers doctored in four ways must each be caught."""
        import contextlib
        import copy
        import io
        pick = lambda kind, outcome: next((o for o in ops if o.kind == kind and o.outcome == outcome), None)  # noqa: E731
        cases = []
        sub, up, rev, ab = pick("submit", "ok"), pick("upload", "ok"), pick("review", "ok"), pick("submit", "abandoned")
        if sub:
            cases.append(("a lost submission", lambda o: o is sub, lambda o: setattr(o, "answer", {**o.answer, "responseId": "rsp_lost"})))
        if up:
            cases.append(("a changed upload", lambda o: o is up, lambda o: o.meta.update(sha256="0" * 64)))
        if rev:
            cases.append(("a review step applied twice", lambda o: o is rev,
                          lambda o: setattr(o, "answer", {**o.answer, "revision": o.answer["revision"] + 1})))
        if sub:
            cases.append(("an abandoned request that is present", lambda o: o is sub, lambda o: setattr(o, "outcome", "abandoned")))
        corrected = {o.target for o in ops if o.kind == "resubmit" and o.outcome == "ok"}
        plain = next((o for o in ops if o.kind == "submit" and o.outcome == "ok" and o.answer["responseId"] not in corrected), None)
        if plain:
            cases.append(("changed answers", lambda o: o is plain, lambda o: o.meta.update(answers={**o.meta["answers"], "n": -1})))
        caught = []
        for name, which, mutate in cases:
            doctored = []
            for o in ops:
                if which(o):
                    o = copy.deepcopy(o)
                    mutate(o)
                doctored.append(o)
            scratch = Checks("self-test")
            with contextlib.redirect_stdout(io.StringIO()):
                self.verify_db(doctored, scratch)
            if scratch.failed:
                caught.append(name)
        checks.check("chaos self-test: doctored ledgers (lost, changed, applied twice, abandoned-but-present, changed answers) "
                     "are caught", len(caught) == len(cases) == 5, f"caught {caught}")

    def verify_db(self, ops: list[Op], checks: Checks) -> None:
        org = self.org
        with self.database() as q:
            responses = {row[0]: row for row in q(
                "SELECT client_submission_id, response_id, submitter, review_state, revision, field_task_id, answers, request_sha256 "
                "FROM responses WHERE org_id=?", (org.org_id,))}
            uploads = {row[0]: row for row in q(
                "SELECT client_upload_id, sha256, size, uploader FROM uploads WHERE org_id=?", (org.org_id,))}
            keys = {row[0]: row for row in q(
                "SELECT idempotency_key, route, target, status FROM idempotency_keys WHERE org_id=?", (org.org_id,))}
            audit = {(row[0], row[1]): row[2] for row in q(
                "SELECT target_id, revision, action FROM audit WHERE org_id=? AND target_type='response' AND revision IS NOT NULL",
                (org.org_id,))}
            tasks = {row[0]: row for row in q("SELECT task_id, state, response_id FROM tasks WHERE org_id=?", (org.org_id,))}
            dup_csid = q("SELECT client_submission_id, COUNT(*) FROM responses GROUP BY org_id, client_submission_id HAVING COUNT(*) > 1")
            dup_cuid = q("SELECT client_upload_id, COUNT(*) FROM uploads GROUP BY org_id, client_upload_id HAVING COUNT(*) > 1")

        bad: list[str] = []
        ok_sub = [o for o in ops if o.kind == "submit" and o.outcome == "ok"]
        for o in ok_sub:
            row = responses.get(o.key)
            if row is None:
                bad.append(f"accepted submission {o.key} ({o.answer['responseId']}) is missing")
            elif row[1] != o.answer["responseId"] or row[2] != o.actor:
                bad.append(f"submission {o.key}: ledger {o.answer['responseId']}, database {row[1]}")
        checks.check("every 2xx'd submission is in the database with its responseId", not bad,
                     f"{len(ok_sub)} checked; " + "; ".join(bad[:3]))

        # The bytes: the digest of the body as sent, and the answers of the last ok resubmission
        # (or of the submission, when none was).
        resubmitted: dict[str, tuple[int, dict]] = {}
        for o in ops:
            if o.kind == "resubmit" and o.outcome == "ok":
                rev = int(o.answer["revision"])
                if o.target not in resubmitted or rev > resubmitted[o.target][0]:
                    resubmitted[o.target] = (rev, o.meta["answers"])
        bad = []
        for o in ok_sub:
            row = responses.get(o.key)
            if row is None:
                continue
            want = resubmitted.get(row[1], (0, o.meta["answers"]))[1]
            if json.loads(row[6]) != want:
                bad.append(f"{o.key}: answers {row[6][:80]}, sent {json.dumps(want)[:80]}")
            # SQLite gives the BLOB as bytes, psql's JSON a bytea as "\x…" hex.
            stored = row[7].hex() if isinstance(row[7], bytes) else str(row[7] or "").removeprefix("\\x")
            sent = sha256_hex(o.data.split(b"\r\n\r\n", 1)[1])
            if stored != sent:
                bad.append(f"{o.key}: stored request digest {stored[:16]}, sent body {sent[:16]}")
        checks.check("every 2xx'd submission is stored with the bytes sent and the answers of its last 2xx'd step", not bad,
                     f"{len(ok_sub)} checked, {len(resubmitted)} resubmitted; " + "; ".join(bad[:3]))

        # One responseId per clientSubmissionId across every answer the clients saw (replays included).
        seen: dict[str, set] = {}
        for o in ops:
            if o.kind in ("submit", "replay") and o.outcome == "ok":
                seen.setdefault(o.key, set()).add(o.answer["responseId"])
        multi = {k: v for k, v in seen.items() if len(v) > 1}
        checks.check("no clientSubmissionId twice (database and answers)", not dup_csid and not multi,
                     f"{len(responses)} rows; duplicates {dup_csid[:3]} {list(multi.items())[:3]}")

        bad = []
        ok_up = [o for o in ops if o.kind == "upload" and o.outcome == "ok"]
        for o in ok_up:
            row = uploads.get(o.key)
            if row is None:
                bad.append(f"accepted upload {o.key} is missing")
            elif row[1] != o.meta["sha256"] or row[2] != o.meta["size"] or (o.answer or {}).get("sha256") != o.meta["sha256"]:
                bad.append(f"upload {o.key}: ledger sha {o.meta['sha256']}/{o.meta['size']}, database {row[1]}/{row[2]}")
        checks.check("every 2xx'd upload is in the database with its sha256 and size", not bad,
                     f"{len(ok_up)} checked; " + "; ".join(bad[:3]))
        checks.check("no clientUploadId twice", not dup_cuid, str(dup_cuid[:3]))

        bad = []
        abandoned = [o for o in ops if o.outcome == "abandoned"]
        for o in abandoned:
            if o.kind == "submit" and o.key in responses:
                bad.append(f"abandoned submission {o.key} is present as {responses[o.key][1]}")
            if o.kind == "upload" and o.key in uploads:
                bad.append(f"abandoned upload {o.key} is present")
            if o.kind in ("review", "resubmit", "task") and o.key in keys:
                bad.append(f"abandoned {o.kind} key {o.key} has an idempotency record")
        checks.check("every abandoned 1001 request left no trace", not bad, f"{len(abandoned)} abandoned; " + "; ".join(bad[:3]))

        # Review steps: each ok step has its idempotency record and its audit entry at its revision;
        # each response ends at the revision and state of its last ok step.
        bad = []
        last: dict[str, dict] = {}
        for o in ops:
            if o.kind in ("review", "resubmit") and o.outcome == "ok":
                rev = int(o.answer["revision"])
                if o.key not in keys:
                    bad.append(f"{o.kind} {o.key} on {o.target}: no idempotency record")
                if (o.target, rev) not in audit:
                    bad.append(f"{o.kind} {o.key} on {o.target}: no audit entry at revision {rev}")
                if rev != o.meta["expected"] + 1:
                    bad.append(f"{o.kind} {o.key}: expected revision {o.meta['expected']}, answered {rev}")
                if o.target not in last or rev > last[o.target]["revision"]:
                    last[o.target] = o.answer
        by_rid = {row[1]: row for row in responses.values()}
        for rid, ans in last.items():
            row = by_rid.get(rid)
            if row is None:
                bad.append(f"reviewed response {rid} missing")
            elif row[4] != ans["revision"] or row[3] != ans["reviewState"]:
                bad.append(f"{rid}: database at revision {row[4]} {row[3]}, last ok step {ans['revision']} {ans['reviewState']}")
        for rid, row in by_rid.items():
            if rid not in last and row[4] != 1:
                bad.append(f"{rid}: revision {row[4]} but no ok review step in any ledger")
        n_steps = sum(1 for o in ops if o.kind in ('review', 'resubmit') and o.outcome == 'ok')
        checks.check("every 2xx'd review step is recorded once, and every response is at its last step's revision", not bad,
                     f"{n_steps} steps on {len(last)} responses; " + "; ".join(bad[:3]))

        bad = []
        for o in ops:
            if o.kind == "task" and o.outcome == "ok":
                if o.answer["taskId"] not in tasks:
                    bad.append(f"task {o.answer['taskId']} missing")
                if o.key not in keys:
                    bad.append(f"task key {o.key} has no idempotency record")
        completed = [t for t in tasks.values() if t[1] == "completed"]
        checks.check("every 2xx'd task exists", not bad, f"{len(tasks)} tasks, {len(completed)} completed; " + "; ".join(bad[:3]))

    def verify_files_and_check(self, ops: list[Op], checks: Checks) -> None:
        org = self.org
        ok_sub = [o for o in ops if o.kind == "submit" and o.outcome == "ok"]

        leftovers = [f for s in self.servers for f in s.files("tmp")]
        checks.check("no temp files after the final graceful stop", not leftovers, str(leftovers[:5]))

        if self.has_command("check"):
            self.server.expect_check(checks, self.check_name)
        else:
            checks.check(self.check_name, False, "this surveyd has no `check` command")

        # And the restarted server serves what was accepted.
        self.start_servers()
        try:
            sample = random.Random(1).sample(ok_sub, min(20, len(ok_sub)))
            user_tokens = {u.user_id: u.token for u in org.collectors}
            bad = []
            for o in sample:
                r = self.client().get(f"/v1/orgs/{org.org_id}/responses?clientSubmissionId={o.key}", token=user_tokens[o.actor])
                if r.status != 200 or r.json.get("responseId") != o.answer["responseId"]:
                    bad.append(f"{o.key}: {r.status} {r.text[:100]}")
            checks.check("after a restart, reconciling by clientSubmissionId finds every sampled accepted submission", not bad,
                         f"{len(sample)} sampled; " + "; ".join(bad[:3]))
        finally:
            self.stop_servers()

    def verify_backups(self, checks: Checks) -> None:
        if not self.args.backups:
            return
        if not self.has_command("backup"):
            checks.check("online backups during the chaos", False, "this surveyd has no `backup` command")
            return
        for i, b in enumerate(self.backups, 1):
            if not checks.check(f"online backup {i} during the chaos exits 0", b["rc"] == 0,
                                f"{b['seconds']:.2f}s: " + b["out"].strip().replace("\n", " | ")[:300]):
                continue
            bs = ServerProcess(b["dest"])
            bs.expect_check(checks, f"backup {i}: surveyd check exits 0")
            conn = db_connect(bs.db_path)
            try:
                rids = {r[0]: r[1] for r in conn.execute("SELECT client_submission_id, response_id FROM responses")}
                ups = {r[0]: r[1] for r in conn.execute("SELECT client_upload_id, sha256 FROM uploads")}
            finally:
                conn.close()
            missing = [o.key for o in b["before"] if (o.kind == "submit" and rids.get(o.key) != o.answer["responseId"])
                       or (o.kind == "upload" and ups.get(o.key) != o.meta["sha256"])]
            checks.check(f"backup {i}: holds everything 2xx'd before it began", not missing,
                         f"{len(b['before'])} expected; missing {missing[:3]}")
            try:
                bs.start()
                sub = next((o for o in b["before"] if o.kind == "submit"), None)
                ok = True
                detail = "served"
                if sub is not None:
                    tok = {u.user_id: u.token for u in self.org.collectors}[sub.actor]
                    r = bs.client().get(f"/v1/orgs/{self.org.org_id}/responses/{sub.answer['responseId']}", token=tok)
                    ok = r.status == 200
                    detail = f"GET an accepted response -> {r.status}"
                checks.check(f"backup {i}: surveyd serve --data-dir BACKUP serves it", ok, detail)
            except Exception as e:  # noqa: BLE001
                checks.check(f"backup {i}: surveyd serve --data-dir BACKUP serves it", False, str(e)[:300])
            finally:
                bs.kill9()


def build_parser(doc: str = __doc__) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=10, help="kill -9 cycles (default 10)")
    p.add_argument("--long", action="store_true", help="long form: 60 cycles, 6 collectors, 2 reviewers")
    p.add_argument("--collectors", type=int, default=4)
    p.add_argument("--reviewers", type=int, default=2)
    p.add_argument("--min-up", type=float, default=0.4, help="least seconds between kills")
    p.add_argument("--max-up", type=float, default=2.0, help="most seconds between kills")
    p.add_argument("--abandon-rate", type=float, default=0.2, help="share of 1001 answers a client gives up on")
    p.add_argument("--time-limit", type=float, default=150.0, help="whole-run bound in seconds")
    p.add_argument("--op-timeout", type=float, default=60.0, help="most seconds one operation may retry")
    p.add_argument("--request-timeout", type=float, default=20.0)
    p.add_argument("--backups", type=int, default=1, help="online backups taken during the chaos (0 to skip)")
    p.add_argument("--check-after-kill", type=int, default=3,
                   help="times `surveyd check` runs on the killed server's data dir before a restart (reported, not judged)")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--json-out", help="write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the data dir")
    return p


def main() -> int:
    a = build_parser().parse_args()
    if a.long:
        a.cycles = max(a.cycles, 60)
        a.collectors = max(a.collectors, 6)
        a.time_limit = max(a.time_limit, 900.0)
        a.backups = max(a.backups, 3)
        a.check_after_kill = max(a.check_after_kill, 8)
    return Harness(a).run()


if __name__ == "__main__":
    sys.exit(main())
