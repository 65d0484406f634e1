#!/usr/bin/env python3
"""The chaos test on PostgreSQL: chaos.py's collectors, reviewers, admin and subscription flipper,
spread over THREE `surveyd serve` processes on ONE PostgreSQL 15 database (a throwaway cluster of
scripts/pg_cluster.sh), while, cycle after cycle,
  - one surveyd process at a time is killed with SIGKILL and started again,
  - every connection between surveyd and PostgreSQL is cut (they go through a proxy,
    `fault_proxy.py --cut`, that drops them all at once),
  - PostgreSQL itself is restarted under load (`pg_ctl restart -m immediate`), and stopped for a
    few seconds now and then (writes must answer 503 / 1040 with Retry-After, `/readyz` 503).
Every request goes to one of the three processes at random, as through a load balancer without
health checks; a retry usually lands on another process than the attempt before it.

A webhook for every event type delivers to a receiver here (Docs/examples/webhook_receiver.py's
signature check). The contract is at-least-once delivery, in order, the same bytes on every
attempt (Docs/webhooks.md); the receiver processes each `webhook-id` once.

Afterwards, on the PostgreSQL database (psql) and through the API, the checks of chaos.py — every
ok operation present once with its ids and bytes, no client id twice, nothing of an abandoned
operation, each response at its last ok review step, `surveyd check` exits 0 — and the webhook's:
every event delivered (each at least once, each once processed), one event per accepted write and
none for an abandoned one, in log order, duplicates byte-identical.

  python3 Harness/chaos_postgres.py                # 4 cycles, 1 restart, 1 outage (under a minute; run_all.sh runs 8)
  python3 Harness/chaos_postgres.py --long         # long form: 30 cycles, 6 restarts, 2 outages
  python3 Harness/chaos_postgres.py --cycles 12 --pg-restarts 3 --seed 7 --keep
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos import Harness, Op, build_parser  # noqa: E402
from surveyd_client import (HARNESS_DIR, REPO_ROOT, Checks, Client, HTTPFailure, ServerProcess, log, new_id,  # noqa: E402
                            work_root)

PG_BIN = "/usr/lib/postgresql/15/bin"
EVENT_TYPES = ["response.accepted", "response.review", "response.resubmitted", "upload.completed", "task.completed"]
EVENT_ACTIONS = ["response.accept", "response.resubmit", "review.startReview", "review.returnForCorrection", "review.approve",
                 "review.reject", "upload.commit", "task.complete"]


def _receiver_module():
    """The documented receiver's signature check, so the harness verifies as a reader would."""
    path = os.path.join(REPO_ROOT, "Docs", "examples", "webhook_receiver.py")
    spec = importlib.util.spec_from_file_location("webhook_receiver", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _as_postgres(argv: list[str]) -> list[str]:
    # initdb and the server refuse root: as root the cluster belongs to `postgres` (pg_cluster.sh).
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


class PgCluster:
    """A throwaway PostgreSQL 15 cluster (scripts/pg_cluster.sh) on a Unix socket of its own."""

    OPTIONS = "-c track_commit_timestamp=on"

    def __init__(self, port: int):
        self.port = port
        # Not under the harness work dir: that one is private to root, and the cluster runs as postgres.
        self.dir = tempfile.mkdtemp(prefix="surveyd-chaos-pg.", dir="/tmp")
        self.url = ""

    def _script(self, *args: str) -> str:
        env = {**os.environ, "PG_CLUSTER_OPTIONS": self.OPTIONS}
        r = subprocess.run([os.path.join(REPO_ROOT, "scripts", "pg_cluster.sh"), *args], capture_output=True, env=env,
                           timeout=120, cwd=REPO_ROOT)
        if r.returncode != 0:
            raise RuntimeError(f"pg_cluster.sh {' '.join(args)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return r.stdout.decode().strip()

    def start(self) -> None:
        self.url = self._script("start", self.dir, str(self.port))

    @property
    def socket_path(self) -> str:
        return os.path.join(self.dir, f".s.PGSQL.{self.port}")

    def database_url(self, db: str) -> str:
        """The direct URL (the Unix socket, no proxy) of database `db`."""
        return f"postgresql:///{db}?host={self.dir}&port={self.port}&user=postgres"

    def restart(self) -> float:
        """`pg_ctl restart -m immediate`: every backend ends at once, as in a crash; recovery on start."""
        t = time.monotonic()
        r = subprocess.run(_as_postgres([f"{PG_BIN}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/server.log",
                                         "-m", "immediate", "-w", "-t", "60", "restart"]),
                           capture_output=True, timeout=90, cwd="/")
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl restart exited {r.returncode}: {(r.stdout + r.stderr).decode(errors='replace')}")
        return time.monotonic() - t

    def down(self) -> None:
        self._script("down", self.dir)

    def up(self) -> None:
        self._script("up", self.dir, str(self.port))

    def psql(self, db: str, sql: str) -> str:
        r = subprocess.run(["psql", self.database_url(db), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                           capture_output=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"psql exited {r.returncode}: {r.stderr.decode(errors='replace')} [{sql[:200]}]")
        return r.stdout.decode()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._script("stop", self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def bind(sql: str, args: tuple) -> str:
    """`?` placeholders (chaos.py's SQL) filled with literals; the SQL has no `?` inside quotes."""
    parts = sql.split("?")
    if len(parts) - 1 != len(args):
        raise ValueError(f"{len(args)} arguments for {len(parts) - 1} placeholders: {sql}")
    return parts[0] + "".join(literal(a) + p for a, p in zip(args, parts[1:]))


class CutProxyProcess:
    """fault_proxy.py --cut in a process of its own: the harness's client threads must not slow
    every database round trip down by holding the interpreter lock the proxy would need."""

    def __init__(self, upstream: str):
        self.log_path = os.path.join(work_root(), f"pg-proxy-{new_id('p')[-8:]}.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HARNESS_DIR, "fault_proxy.py"), "--cut",
                                      "--upstream", upstream], stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.port = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not self.port:
            with open(self.log_path) as f:
                first = f.readline()
            if first.startswith("cut proxy on 127.0.0.1:"):
                self.port = int(first.split(":")[1].split()[0])
            elif self.proc.poll() is not None:
                break
            else:
                time.sleep(0.05)
        if not self.port:
            self.stop()
            raise RuntimeError(f"the cut proxy did not start: {open(self.log_path).read()[:500]}")

    def cut(self) -> None:
        os.kill(self.proc.pid, signal.SIGUSR1)

    def figures(self) -> dict:
        """Connections cut, from the proxy's log (each cut logs `cut N connections`)."""
        cuts, dropped = 0, 0
        with open(self.log_path) as f:
            for line in f:
                if line.startswith("cut ") and line.rstrip().endswith(" connections"):
                    cuts += 1
                    dropped += int(line.split()[1])
        return {"cuts_logged": cuts, "connections_dropped": dropped}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class WebhookReceiver:
    """Receives the deliveries of one webhook: checks each signature, processes each event id
    once (the first receipt), and remembers every receipt."""

    def __init__(self):
        self.mod = _receiver_module()
        self.key = b""
        self.lock = threading.Lock()
        self.first: dict[str, tuple[bytes, dict]] = {}   # event id -> (body, event) of its first receipt
        self.order: list[str] = []                      # event ids in the order first received
        self.receipts = 0
        self.repeats: dict[str, int] = {}               # event id -> receipts after the first
        self.repeat_body_differs: list[str] = []
        self.refused: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    event = receiver.mod.verify(receiver.key, self.headers, body)
                except ValueError as e:
                    with receiver.lock:
                        receiver.refused.append(str(e))
                    self.send_response(401)
                    self.end_headers()
                    return
                receiver.record(self.headers["webhook-id"], body, event)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name="webhook-receiver", daemon=True).start()

    def record(self, event_id: str, body: bytes, event: dict) -> None:
        with self.lock:
            self.receipts += 1
            if event_id in self.first:
                self.repeats[event_id] = self.repeats.get(event_id, 0) + 1
                if self.first[event_id][0] != body:
                    self.repeat_body_differs.append(event_id)
            else:
                self.first[event_id] = (body, event)
                self.order.append(event_id)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PostgresHarness(Harness):
    def __init__(self, args):
        self.cluster = PgCluster(args.pg_port)
        self.proxy: Optional[CutProxyProcess] = None
        self.receiver: Optional[WebhookReceiver] = None
        self.webhook_id = ""
        self.pick = random.Random(args.seed * 7000)
        self.db_cache: dict[str, list] = {}
        self.pg_events: list[dict] = []        # restarts and outages: kind, seconds, at
        self.outage_probes: list[tuple] = []   # (status, errorCode, Retry-After) of /readyz while PostgreSQL was down
        self.kills_by_server: dict[int, int] = {}
        self.webhook_figures: dict = {}
        # Until when PostgreSQL is (or has just been) restarting or down: 1040s then are expected;
        # the others come from connections that a cut or a restart left broken in the pools.
        self.db_trouble_until = 0.0
        super().__init__(args)

    # -- the cluster, the proxy, the three processes ----------------------------------------

    def make_servers(self) -> list[ServerProcess]:
        # Private addresses allowed: the receiver is on this machine. One second between attempts,
        # so a delivery whose attempt or outcome a fault interrupted is made again within the run.
        extra = ["--webhooks-allow-private", "--webhook-retry-schedule", ",".join(["1s"] * 13)]
        return [ServerProcess.fresh(f"chaos-pg{i + 1}", extra_args=extra) for i in range(3)]

    def start_cluster(self) -> None:
        """The cluster, the proxy in front of it and the webhook receiver, on the first start."""
        self.cluster.start()
        self.cluster.psql("postgres", "CREATE DATABASE chaos")
        self.proxy = CutProxyProcess(self.cluster.socket_path)
        url = f"postgresql://postgres@127.0.0.1:{self.proxy.port}/chaos?connect_timeout=5"
        for s in self.servers:
            s.database_url = url
        self.receiver = WebhookReceiver()
        # A run_all.sh part cut off by its time bound stops what it finds here (the cluster and the proxy).
        d = os.path.join(work_root(), "pg-clusters")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, os.path.basename(self.cluster.dir)), "w") as f:
            f.write(f"{self.cluster.dir}\n{self.proxy.proc.pid}\n")

    def start_servers(self) -> None:
        if self.proxy is None:
            self.start_cluster()
        # One after the other: the first creates the tables (the others would wait for its lock).
        for s in self.servers:
            if not s.running:
                self.start_with_retries(s)

    def start_with_retries(self, s: ServerProcess, tries: int = 5) -> None:
        for i in range(tries):
            try:
                s.start()
                return
            except RuntimeError as e:
                if i == tries - 1:
                    raise
                log(f"chaos-pg: start of {s.data_dir} failed ({str(e)[:200]}); again in 1 s")
                time.sleep(1.0)

    @contextlib.contextmanager
    def database(self):
        """psql on the database, directly (not through the proxy). The database no longer
        changes when this runs (the servers are stopped), so answers are kept for the self-test."""
        def q(sql: str, args: tuple = ()) -> list[tuple]:
            text = bind(sql, args)
            if text not in self.db_cache:
                out = self.cluster.psql("chaos", f"SELECT coalesce(json_agg(row_to_json(t)), '[]'::json) FROM ({text}) t")
                # Columns in order, as tuples (names may repeat).
                self.db_cache[text] = json.loads(out, object_pairs_hook=lambda pairs: tuple(v for _, v in pairs))
            return [tuple(r) for r in self.db_cache[text]]
        yield q

    def backup_command(self, dest: str) -> list[str]:
        return [self.server.binary, "backup", "--database-url", self.cluster.database_url("chaos"), "--to", dest]

    check_name = "surveyd check --database-url exits 0"

    def describe(self) -> str:
        proxy = f"127.0.0.1:{self.proxy.port}" if self.proxy else "not started"
        return (f"PostgreSQL at {self.cluster.dir} (port {self.cluster.port}), proxy {proxy}; "
                f"data dirs " + ", ".join(s.data_dir for s in self.servers))

    def cleanup(self) -> None:
        self.shutdown()
        for s in self.servers:
            s.remove()
        self.cluster.stop()

    def shutdown(self) -> None:
        """Stops what runs beside the servers (the cluster stays, for a kept run)."""
        for s in self.servers:
            with contextlib.suppress(Exception):
                s.kill9()
        if self.proxy:
            self.proxy.stop()
        if self.receiver:
            with contextlib.suppress(Exception):
                self.receiver.stop()

    # -- transport: every request to one of the three, at random -----------------------------

    def client(self, timeout: float = 20.0) -> Client:
        return Client(self.pick.choice(self.servers).port, timeout=timeout)

    def honest_unavailable(self, what: str, r) -> None:
        super().honest_unavailable(what, r)
        if r.error_code == 1040:
            self.stats.add("unavailable_1040_pg_down" if time.monotonic() < self.db_trouble_until else "unavailable_1040_pg_up")

    # -- the webhook --------------------------------------------------------------------------

    def after_seed(self) -> None:
        org = self.org
        body = {"url": f"http://127.0.0.1:{self.receiver.port}/hook", "events": EVENT_TYPES,
                "description": "chaos receiver"}
        key = new_id("wh")
        for _ in range(100):
            try:
                r = self.client(10.0).post(f"/v1/orgs/{org.org_id}/webhooks", token=org.admin.token, json=body,
                                           headers={"Idempotency-Key": key})
            except HTTPFailure:
                time.sleep(0.1)
                continue
            if r.status == 201:
                self.receiver.key = self.receiver.mod.signing_key(r.json["secret"])
                self.webhook_id = r.json["webhookId"]
                return
            raise RuntimeError(f"creating the webhook: {r.status} {r.text[:300]}")
        raise RuntimeError("creating the webhook: no answer")

    def webhook_backlog(self) -> tuple[int, int]:
        """(events behind the webhook's cursor, deliveries pending), read directly."""
        acts = ",".join(literal(a) for a in EVENT_ACTIONS)
        out = self.cluster.psql("chaos", f"""
            SELECT (SELECT count(*) FROM audit a WHERE a.org_id = w.org_id AND a.seq > w.cursor AND a.action IN ({acts})),
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id AND d.status = 'pending')
            FROM webhooks w WHERE w.webhook_id = {literal(self.webhook_id)}""").strip()
        behind, pending = out.split("|")
        return int(behind), int(pending)

    def after_drain(self, checks: Checks) -> None:
        """Waits for the webhook to catch up (all three processes up, no more faults), then checks
        its deliveries against the receiver and the ledger."""
        a = self.args
        t = time.monotonic()
        deadline = t + a.webhook_drain
        behind = pending = -1
        while time.monotonic() < deadline:
            try:
                behind, pending = self.webhook_backlog()
            except RuntimeError:
                behind = pending = -1
            if behind == 0 and pending == 0:
                break
            time.sleep(0.5)
        self.webhook_figures["drain_seconds"] = round(time.monotonic() - t, 1)
        checks.check("the webhook delivered everything after the chaos", behind == 0 and pending == 0,
                     f"{behind} events behind its cursor, {pending} pending after {time.monotonic() - t:.1f}s")
        deliveries = self.list_deliveries()
        self.check_webhooks(checks, deliveries, list(self.ops))

    def list_deliveries(self) -> list[dict]:
        org = self.org
        items: list[dict] = []
        after = None
        while True:
            path = f"/v1/orgs/{org.org_id}/webhooks/{self.webhook_id}/deliveries?limit=500" + (f"&after={after}" if after else "")
            for _ in range(50):
                try:
                    r = self.client(30.0).get(path, token=org.admin.token)
                    if r.status == 200:
                        break
                except HTTPFailure:
                    pass
                time.sleep(0.2)
            else:
                raise RuntimeError(f"listing deliveries: no 200 for {path}")
            items += r.json["items"]
            after = r.json.get("nextCursor")
            if not after:
                return items

    def check_webhooks(self, checks: Checks, deliveries: list[dict], ops: list[Op]) -> None:
        rc = self.receiver
        with rc.lock:
            first = dict(rc.first)
            order = list(rc.order)
            repeats = dict(rc.repeats)
            receipts = rc.receipts
            differs = list(rc.repeat_body_differs)
            refused = list(rc.refused)
        listed = [d["eventId"] for d in deliveries]
        not_ok = [d for d in deliveries if d["status"] != "succeeded"]
        acts = ",".join(literal(x) for x in EVENT_ACTIONS)
        n_events = int(self.cluster.psql("chaos", f"""
            SELECT count(*) FROM audit a, webhooks w WHERE w.webhook_id = {literal(self.webhook_id)}
            AND a.org_id = w.org_id AND a.action IN ({acts})""").strip())
        checks.check("the deliveries listing holds one delivery per event of the audit log, each succeeded",
                     len(listed) == len(set(listed)) == n_events and not not_ok,
                     f"{len(listed)} listed ({len(set(listed))} distinct), {n_events} events in the log; "
                     f"not succeeded: {[(d['eventId'], d['status'], d.get('lastError')) for d in not_ok[:3]]}")
        missing = [e for e in listed if e not in first]
        unknown = [e for e in first if e not in set(listed)]
        checks.check("every event was delivered at least once (each webhook-id received), and nothing else",
                     not missing and not unknown, f"{len(first)} event ids received in {receipts} deliveries; "
                     f"missing {missing[:3]}, not in the listing {unknown[:3]}")
        checks.check("every delivery was signed with the webhook's secret", not refused, "; ".join(refused[:3]))
        checks.check("a repeated delivery carries the same bytes as the first (same webhook-id, same body)", not differs,
                     f"{sum(repeats.values())} repeats of {len(repeats)} events; differing {differs[:3]}")
        # In order: the first receipt of each event follows the log (the listing is in log order).
        pos = {e: i for i, e in enumerate(listed)}
        seq = [pos[e] for e in order if e in pos]
        inversions = [(order[i], order[i + 1]) for i in range(len(seq) - 1) if seq[i] > seq[i + 1]]
        checks.check("events were first received in the order of the log", not inversions,
                     f"{len(inversions)} out of order: {inversions[:2]}")

        # The ledger against the events processed (each event id once): one event per accepted
        # write, none for an abandoned one.
        got: dict[tuple, list[str]] = {}
        for eid, (_, ev) in first.items():
            d = ev["data"]
            t = ev["type"]
            if t == "response.accepted":
                k = (t, d["responseId"])
            elif t in ("response.review", "response.resubmitted"):
                k = (t, d["responseId"], d["revision"])
            elif t == "upload.completed":
                k = (t, d["clientUploadId"])
            else:
                k = (t, d["taskId"])
            got.setdefault(k, []).append(eid)
        twice = {k: v for k, v in got.items() if len(v) > 1}
        want: set[tuple] = set()
        for o in ops:
            if o.outcome != "ok":
                continue
            if o.kind == "submit":
                want.add(("response.accepted", o.answer["responseId"]))
            elif o.kind == "upload":
                want.add(("upload.completed", o.key))
            elif o.kind == "review":
                want.add(("response.review", o.target, int(o.answer["revision"])))
            elif o.kind == "resubmit":
                want.add(("response.resubmitted", o.target, int(o.answer["revision"])))
        lacking = [k for k in want if k not in got]
        checks.check("one event per 2xx'd submission, upload, review step and resubmission, none twice", not lacking and not twice,
                     f"{len(want)} expected; lacking {lacking[:3]}; under two event ids {list(twice.items())[:2]}")
        ab_sub = {o.key for o in ops if o.outcome == "abandoned" and o.kind == "submit"}
        ab_up = {o.key for o in ops if o.outcome == "abandoned" and o.kind == "upload"}
        stray = [eid for eid, (_, ev) in first.items()
                 if (ev["type"] == "response.accepted" and ev["data"]["clientSubmissionId"] in ab_sub)
                 or (ev["type"] == "upload.completed" and ev["data"]["clientUploadId"] in ab_up)]
        checks.check("no event for an abandoned request", not stray, f"{len(ab_sub) + len(ab_up)} abandoned; {stray[:3]}")
        completed = {r[0] for r in self.cluster_rows(
            f"SELECT task_id FROM tasks WHERE org_id = {literal(self.org.org_id)} AND state = 'completed'")}
        task_events = {k[1] for k in got if k[0] == "task.completed"}
        checks.check("one task.completed per completed task", completed == task_events,
                     f"{len(completed)} completed, {len(task_events)} events; "
                     f"{sorted(completed ^ task_events)[:3]}")
        self.webhook_figures.update({"events": len(listed), "deliveries_received": receipts, "event_ids_received": len(first),
                                     "repeated_deliveries": sum(repeats.values()), "events_repeated": len(repeats)})

    def cluster_rows(self, sql: str) -> list[tuple]:
        out = self.cluster.psql("chaos", f"SELECT coalesce(json_agg(row_to_json(t)), '[]'::json) FROM ({sql}) t")
        return [tuple(r) for r in json.loads(out, object_pairs_hook=lambda pairs: tuple(v for _, v in pairs))]

    # -- the faults ---------------------------------------------------------------------------

    def killer(self) -> None:
        """Each cycle: one surveyd killed with SIGKILL and restarted, and every database connection
        cut; PostgreSQL restarted (or stopped for a while) at cycles spread over the run."""
        a = self.args
        rng = random.Random(a.seed * 5000)
        t_end = self.t0 + a.time_limit * 0.7
        spread = lambda n, off: {max(1, round((i + off) * a.cycles / n)) for i in range(n)} if n else set()  # noqa: E731
        restart_at = spread(a.pg_restarts, 0.5)
        outage_at = spread(a.pg_outages, 0.25)
        while self.stats.get("kills") < a.cycles and time.monotonic() < t_end:
            self.stop.wait(rng.uniform(a.min_up, a.max_up))
            if self.backup_due(rng):
                self.take_backup()
            with self.server_lock:
                i = rng.randrange(len(self.servers))
                victim = self.servers[i]
                victim.kill9()
                self.stats.add("kills")
                self.kills_by_server[i] = self.kills_by_server.get(i, 0) + 1
                self.kill_times.append(time.monotonic() - self.t0)
                time.sleep(rng.uniform(0.0, 0.15))
                try:
                    self.start_with_retries(victim)
                    self.stats.add("restarts")
                except RuntimeError as e:
                    self.stats.violation(f"surveyd would not start again after a kill: {e}")
            k = self.stats.get("kills")
            # The cut comes at a random moment of the cycle, mostly while writes are in flight.
            self.stop.wait(rng.uniform(0.0, a.max_up / 2))
            self.proxy.cut()
            self.stats.add("connection_cuts")
            if k in restart_at:
                self.stop.wait(rng.uniform(0.0, a.max_up / 2))
                self.pg_restart()
            if k in outage_at:
                self.stop.wait(rng.uniform(0.0, a.max_up / 2))
                self.pg_outage(rng.uniform(2.0, 4.0))
            if k % 5 == 0:
                log(f"chaos-pg: {k} cycles, {self.stats.get('pg_restarts')} PostgreSQL restarts, "
                    f"{self.stats.get('requests')} requests, {self.stats.get('ok_2xx')} 2xx, {self.stats.get('refused_1001')} 1001s, "
                    f"{self.stats.get('unavailable_1040')} 1040s")
        self.chaos_over.set()

    def pg_restart(self) -> None:
        at = time.monotonic() - self.t0
        self.db_trouble_until = float("inf")
        try:
            secs = self.cluster.restart()
            self.stats.add("pg_restarts")
            self.pg_events.append({"kind": "restart", "at": round(at, 1), "seconds": round(secs, 2)})
            log(f"chaos-pg: PostgreSQL restarted (immediate) in {secs:.2f}s")
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            self.stats.violation(f"pg_ctl restart failed: {e}")
        # A second for answers already on their way back (and the retries they cause).
        self.db_trouble_until = time.monotonic() + 1.0

    def pg_outage(self, seconds: float) -> None:
        """PostgreSQL stopped (immediate) for `seconds`: /readyz and writes must say 503 / 1040."""
        at = time.monotonic() - self.t0
        self.db_trouble_until = float("inf")
        try:
            self.cluster.down()
        except RuntimeError as e:
            self.stats.violation(f"stopping PostgreSQL failed: {e}")
            self.db_trouble_until = time.monotonic() + 1.0
            return
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s = self.pick.choice(self.servers)
            try:
                r = Client(s.port, timeout=5.0).get("/readyz")
                self.outage_probes.append((r.status, r.error_code, r.header("retry-after")))
            except HTTPFailure:
                pass
            time.sleep(0.2)
        for _ in range(3):
            try:
                self.cluster.up()
                break
            except RuntimeError as e:
                log(f"chaos-pg: starting PostgreSQL again failed ({str(e)[:200]}); again")
                time.sleep(1.0)
        else:
            self.stats.violation("PostgreSQL would not start again after an outage")
        self.db_trouble_until = time.monotonic() + 1.0
        self.stats.add("pg_outages")
        self.pg_events.append({"kind": "outage", "at": round(at, 1), "seconds": round(seconds, 2)})
        log(f"chaos-pg: PostgreSQL was down for {seconds:.1f}s")

    # -- figures and the run ------------------------------------------------------------------

    def figures(self, ops: list[Op], seconds: float) -> dict:
        f = super().figures(ops, seconds)
        s = self.stats
        f.update({
            "processes": len(self.servers), "kills_by_process": {str(k + 1): v for k, v in sorted(self.kills_by_server.items())},
            "pg_restarts": s.get("pg_restarts"), "pg_outages": s.get("pg_outages"),
            "connection_cuts": s.get("connection_cuts"), **{f"proxy_{k}": v for k, v in self.proxy.figures().items()},
            "unavailable_1040": s.get("unavailable_1040"),
            "unavailable_1040_pg_down": s.get("unavailable_1040_pg_down"), "unavailable_1040_pg_up": s.get("unavailable_1040_pg_up"),
            "readyz_during_outages": {f"{st}/{code}": sum(1 for p in self.outage_probes if (p[0], p[1]) == (st, code))
                                      for st, code in sorted({(p[0], p[1]) for p in self.outage_probes}, key=str)},
            "abandoned": sum(1 for o in ops if o.outcome == "abandoned"),
            "refused_review_races": sum(1 for o in ops if o.outcome == "refused"),
            "ok_operations": sum(1 for o in ops if o.outcome == "ok"),
            "webhook": dict(self.webhook_figures),
        })
        return f

    def print_figures(self, f: dict) -> None:
        super().print_figures(f)
        for k in ["processes", "kills_by_process", "pg_restarts", "pg_outages", "connection_cuts", "proxy_connections_dropped",
                  "unavailable_1040", "unavailable_1040_pg_down", "unavailable_1040_pg_up", "readyz_during_outages", "ok_operations", "abandoned", "refused_review_races", "webhook"]:
            print(f"  {k}: {f[k]}")

    def verify(self, ops: list[Op], checks: Checks) -> None:
        a = self.args
        checks.check("PostgreSQL restarted under load as planned", self.stats.get("pg_restarts") >= a.pg_restarts,
                     f"{self.stats.get('pg_restarts')} of {a.pg_restarts}: {self.pg_events}")
        checks.check("database connections cut every cycle", self.stats.get("connection_cuts") >= self.stats.get("kills"),
                     f"{self.stats.get('connection_cuts')} cuts, {self.proxy.figures()['connections_dropped']} connections dropped")
        if a.pg_outages:
            bad = [p for p in self.outage_probes if not (p[0] == 503 and p[1] == 1040 and p[2])]
            checks.check("/readyz answered 503 / 1040 with Retry-After while PostgreSQL was down",
                         self.outage_probes and not bad, f"{len(self.outage_probes)} probes; other answers {bad[:3]}")
        checks.check("clients saw 503 / 1040 (the database unreachable) and retried them",
                     self.stats.get("unavailable_1040") > 0, f"{self.stats.get('unavailable_1040')} answers")
        super().verify(ops, checks)

    def run(self) -> int:
        rc = 1
        try:
            rc = super().run()
            return rc
        finally:
            self.shutdown()
            if os.path.isdir(os.path.join(self.cluster.dir, "data")):
                if rc == 0 and not self.args.keep:
                    self.cluster.stop()
                else:
                    # Kept for a look, but no server left running.
                    with contextlib.suppress(Exception):
                        self.cluster.down()
                    log(f"chaos-pg: cluster kept in {self.cluster.dir}: scripts/pg_cluster.sh up {self.cluster.dir} "
                        f"{self.cluster.port}, then psql '{self.cluster.database_url('chaos')}'; "
                        f"scripts/pg_cluster.sh stop {self.cluster.dir} removes it")
            else:
                shutil.rmtree(self.cluster.dir, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(work_root(), "pg-clusters", os.path.basename(self.cluster.dir)))


def main() -> int:
    p = build_parser(__doc__)
    p.set_defaults(cycles=4, min_up=0.5, max_up=2.5, check_after_kill=0, time_limit=240.0, backups=1)
    p.add_argument("--pg-restarts", type=int, default=1, help="PostgreSQL restarts under load (pg_ctl restart -m immediate)")
    p.add_argument("--pg-outages", type=int, default=1, help="times PostgreSQL is stopped for 2-4 s")
    p.add_argument("--pg-port", type=int, default=54349,
                   help="the cluster's port (names its Unix socket; 54329 and 54339 are other runs')")
    p.add_argument("--webhook-drain", type=float, default=120.0, help="most seconds to wait for the webhook to catch up")
    a = p.parse_args()
    if a.long:
        a.cycles = max(a.cycles, 30)
        a.pg_restarts = max(a.pg_restarts, 6)
        a.pg_outages = max(a.pg_outages, 2)
        a.collectors = max(a.collectors, 6)
        a.time_limit = max(a.time_limit, 1200.0)
        a.backups = max(a.backups, 2)
        a.webhook_drain = max(a.webhook_drain, 600.0)
    a.check_after_kill = 0  # a live shared database has writes in flight: `check` is run after the stop only
    return PostgresHarness(a).run()


if __name__ == "__main__":
    sys.exit(main())
