"""A small client for surveyd, a wrapper around a real `surveyd serve` process, and seeding.

Standard library only. Every connection goes to 127.0.0.1.

    from surveyd_client import ServerProcess, seed_org, Client
    server = ServerProcess.fresh("chaos")     # a new data dir under the harness work dir
    server.start()
    org = seed_org(server)                    # operator, admin, collectors, reviewer, two surveys
    reply = server.client().post(f"/v1/orgs/{org.org_id}/responses", token=..., json={...})
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

HOST = "127.0.0.1"
HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HARNESS_DIR)


def surveyd_bin() -> str:
    """SURVEYD_BIN, else .build/debug/surveyd relative to the repository root."""
    b = os.environ.get("SURVEYD_BIN") or os.path.join(REPO_ROOT, ".build/debug/surveyd")
    if not os.path.isabs(b):
        b = os.path.join(REPO_ROOT, b)
    return b


def work_root() -> str:
    """Where data dirs and logs go (HARNESS_WORK_DIR, default a temp dir per process)."""
    d = os.environ.get("HARNESS_WORK_DIR")
    if not d:
        d = os.path.join(tempfile.gettempdir(), f"surveyd-harness-{os.getpid()}")
        os.environ["HARNESS_WORK_DIR"] = d
    os.makedirs(d, exist_ok=True)
    return d


# ---------------------------------------------------------------------------------------------
# Time and ids


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso_in(seconds: float) -> str:
    return iso(datetime.now(timezone.utc) + timedelta(seconds=seconds))


def new_id(prefix: str = "h") -> str:
    """A client id: 8-128 chars of [A-Za-z0-9_-:.]."""
    return f"{prefix}-{uuid.uuid4()}"


def jpeg(size: int = 2048, seed: int = 1) -> bytes:
    """Bytes that carry a JPEG signature (and end marker); content varies with `seed`."""
    head = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00])
    rnd = random.Random(seed)
    n = max(0, size - len(head) - 2)
    return head + rnd.randbytes(n) + bytes([0xFF, 0xD9])


def sha256_hex(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


# ---------------------------------------------------------------------------------------------
# HTTP


class Reply:
    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes, raw_head: bytes = b""):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.raw_head = raw_head
        self._json: Any = None
        self._parsed = False

    @property
    def json(self) -> Any:
        if not self._parsed:
            self._parsed = True
            try:
                self._json = json.loads(self.body) if self.body else None
            except ValueError:
                self._json = None
        return self._json

    @property
    def error_code(self) -> Optional[int]:
        j = self.json
        return j.get("errorCode") if isinstance(j, dict) else None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        return f"<Reply {self.status} {self.error_code} {self.text[:200]!r}>"


class HTTPFailure(Exception):
    """The exchange ended without a complete answer (refused, reset, closed early, timed out)."""


def read_reply(sock: socket.socket, head_only: bool = False, max_bytes: int = 256 << 20) -> Reply:
    data = bytearray()
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise HTTPFailure(f"connection closed before a complete head ({len(data)} bytes)")
        data += chunk
        if len(data) > 1 << 20:
            raise HTTPFailure("head too large")
    end = data.index(b"\r\n\r\n")
    head = bytes(data[:end])
    rest = bytes(data[end + 4:])
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise HTTPFailure(f"bad status line {lines[0]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if head_only or status in (204, 304) or 100 <= status < 200:
        return Reply(status, reason, headers, b"", head)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        buf = bytearray(rest)
        body = bytearray()
        while True:
            while b"\r\n" not in buf:
                c = sock.recv(65536)
                if not c:
                    raise HTTPFailure("closed inside a chunked body")
                buf += c
            i = buf.index(b"\r\n")
            size = int(bytes(buf[:i]).split(b";")[0].strip() or b"0", 16)
            del buf[:i + 2]
            while len(buf) < size + 2:
                c = sock.recv(65536)
                if not c:
                    raise HTTPFailure("closed inside a chunk")
                buf += c
            if size == 0:
                break
            body += buf[:size]
            del buf[:size + 2]
        return Reply(status, reason, headers, bytes(body), head)
    if "content-length" in headers:
        n = int(headers["content-length"])
        body = bytearray(rest)
        while len(body) < n:
            c = sock.recv(min(65536, n - len(body)))
            if not c:
                raise HTTPFailure(f"closed after {len(body)} of {n} body bytes")
            body += c
        return Reply(status, reason, headers, bytes(body[:n]), head)
    body = bytearray(rest)
    while len(body) < max_bytes:
        c = sock.recv(65536)
        if not c:
            break
        body += c
    return Reply(status, reason, headers, bytes(body), head)


def build_request(method: str, path: str, host_port: int, token: Optional[str] = None, json_body: Any = None,
                  body: Optional[bytes] = None, headers: Optional[dict[str, str]] = None) -> bytes:
    """The exact bytes of one HTTP/1.1 request (Connection: close). A retry resends these bytes."""
    if body is None and json_body is not None:
        body = json.dumps(json_body, separators=(",", ":"), sort_keys=True).encode()
    # The Host carries no port, so a retry after a restart on another port is still the same bytes.
    hdrs = {"Host": "127.0.0.1", "Connection": "close"}
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token}"
    if json_body is not None:
        hdrs["Content-Type"] = "application/json"
    for k, v in (headers or {}).items():
        hdrs[k] = v
    if body is not None or method in ("POST", "PUT", "PATCH"):
        hdrs["Content-Length"] = str(len(body or b""))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    return head.encode("latin-1") + (body or b"")


class Client:
    """One request per connection, like a phone on a bad network. Raises HTTPFailure when no
    complete answer arrives (the outcome is then unknown: the server may or may not have acted)."""

    def __init__(self, port: int, timeout: float = 30.0):
        self.port = port
        self.timeout = timeout

    def send_raw(self, data: bytes, head_only: bool = False, timeout: Optional[float] = None) -> Reply:
        try:
            with socket.create_connection((HOST, self.port), timeout=timeout or self.timeout) as s:
                s.sendall(data)
                return read_reply(s, head_only=head_only)
        except HTTPFailure:
            raise
        except (OSError, ValueError) as e:
            raise HTTPFailure(f"{type(e).__name__}: {e}") from None

    def request(self, method: str, path: str, token: Optional[str] = None, json: Any = None, body: Optional[bytes] = None,
                headers: Optional[dict[str, str]] = None, timeout: Optional[float] = None) -> Reply:
        data = build_request(method, path, self.port, token, json, body, headers)
        return self.send_raw(data, head_only=(method == "HEAD"), timeout=timeout)

    def get(self, path: str, token: Optional[str] = None, **kw) -> Reply:
        return self.request("GET", path, token=token, **kw)

    def post(self, path: str, token: Optional[str] = None, json: Any = None, **kw) -> Reply:
        return self.request("POST", path, token=token, json=json, **kw)

    def put(self, path: str, token: Optional[str] = None, json: Any = None, **kw) -> Reply:
        return self.request("PUT", path, token=token, json=json, **kw)

    def delete(self, path: str, token: Optional[str] = None, **kw) -> Reply:
        return self.request("DELETE", path, token=token, **kw)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The server process

_LIVE: "set[ServerProcess]" = set()
_LIVE_LOCK = threading.Lock()


def _pid_dir() -> str:
    d = os.path.join(work_root(), "pids")
    os.makedirs(d, exist_ok=True)
    return d


def kill_all_servers() -> None:
    """Kills every surveyd this process started and has not stopped (by pid)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for s in live:
        try:
            s.kill9()
        except Exception:  # noqa: BLE001
            pass


def _on_term(signum, frame):  # noqa: ARG001
    kill_all_servers()
    raise SystemExit(128 + signum)


import atexit  # noqa: E402

atexit.register(kill_all_servers)
try:
    signal.signal(signal.SIGTERM, _on_term)
except ValueError:
    pass  # not the main thread


class ServerProcess:
    """A real `surveyd serve` on 127.0.0.1 with its own data dir: start, kill -9, SIGTERM, restart."""

    def __init__(self, data_dir: str, binary: Optional[str] = None, extra_args: Optional[list[str]] = None,
                 log_path: Optional[str] = None, cwd: Optional[str] = None, database_url: Optional[str] = None):
        self.data_dir = data_dir
        # With a PostgreSQL URL the database is there (shared with other processes) and the data
        # dir only holds request bodies on their way in; every command gets the URL too.
        self.database_url = database_url
        self.cwd = cwd
        self.binary = binary or surveyd_bin()
        self.extra_args = extra_args or []
        self.log_path = log_path or (data_dir.rstrip("/") + ".log")
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.kills = 0
        self._log = None
        self.lock = threading.Lock()

    @classmethod
    def fresh(cls, name: str, **kw) -> "ServerProcess":
        d = os.path.join(work_root(), f"{name}-{uuid.uuid4().hex[:8]}")
        return cls(d, **kw)

    def client(self, timeout: float = 30.0) -> Client:
        return Client(self.port, timeout=timeout)

    def db_args(self) -> list[str]:
        return ["--database-url", self.database_url] if self.database_url else []

    @property
    def db_path(self) -> str:
        return os.path.join(self.data_dir, "surveyd.sqlite")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc else None

    def start(self, port: Optional[int] = None, timeout: float = 20.0) -> None:
        """Starts and waits for /healthz 200. Keeps the previous port on a restart when it can."""
        if self.running:
            raise RuntimeError("already running")
        want = port or self.port or free_port()
        for attempt in range(3):
            self.port = want
            self._log = open(self.log_path, "ab")
            self._log.write(f"--- start {self.starts + 1} on port {want} at {iso(datetime.now(timezone.utc))}\n".encode())
            self._log.flush()
            self.proc = subprocess.Popen(
                [self.binary, "serve", "--data-dir", self.data_dir, "--port", str(want), "--no-log"] + self.db_args()
                + self.extra_args,
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, cwd=self.cwd or REPO_ROOT)
            self._track()
            self.starts += 1
            deadline = time.monotonic() + timeout
            c = Client(want, timeout=2.0)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    if c.get("/healthz").status == 200:
                        return
                except HTTPFailure:
                    pass
                time.sleep(0.01)
            if self.proc.poll() is None:
                self.kill9()
                raise RuntimeError(f"surveyd did not answer /healthz on {want} within {timeout}s (log {self.log_path})")
            # It exited: most likely the port was taken meanwhile; try another one.
            self._untrack(self.proc.pid)
            self.proc = None
            want = free_port()
        raise RuntimeError(f"surveyd would not start (log {self.log_path}): {self.tail_log()}")

    def _track(self) -> None:
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            with open(os.path.join(_pid_dir(), str(self.proc.pid)), "w") as f:
                f.write(self.binary)
        except OSError:
            pass

    def _untrack(self, pid: int) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self)
        try:
            os.unlink(os.path.join(_pid_dir(), str(pid)))
        except OSError:
            pass

    def kill9(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            self.kills += 1
        p.wait()
        self._untrack(p.pid)
        self.proc = None

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        p = self.proc
        if p is None:
            return -1
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            rc = p.wait()
        self._untrack(p.pid)
        self.proc = None
        return rc

    def restart(self) -> None:
        self.kill9()
        self.start()

    def tail_log(self, n: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
            return data[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def cli(self, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Runs a `surveyd` command on this data dir."""
        r = subprocess.run([self.binary, *args, "--data-dir", self.data_dir, *self.db_args()], capture_output=True,
                           timeout=timeout, cwd=REPO_ROOT)
        if check and r.returncode != 0:
            raise RuntimeError(f"surveyd {' '.join(args)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return r

    def cli_last_line(self, *args: str) -> str:
        out = self.cli(*args).stdout.decode().strip().splitlines()
        return out[-1].strip() if out else ""

    def check(self, timeout: float = 120.0) -> tuple[int, str]:
        """`surveyd check --data-dir` (and `--database-url`): (exit status, report)."""
        r = subprocess.run([self.binary, "check", "--data-dir", self.data_dir, *self.db_args()], capture_output=True,
                           timeout=timeout, cwd=REPO_ROOT)
        return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")

    def expect_check(self, checks: "Checks", name: str) -> bool:
        """Records whether `surveyd check` passes on this data dir (exit 0), its report as the detail."""
        rc, report = self.check()
        return checks.check(name, rc == 0, report.strip().replace("\n", " | ")[:500])

    def remove(self) -> None:
        self.kill9()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- the database, read-only, as another process sees it

    def db(self) -> sqlite3.Connection:
        return db_connect(self.db_path)

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        conn = self.db()
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def files(self, sub: str) -> list[str]:
        root = os.path.join(self.data_dir, sub)
        out = []
        for dp, _, fns in os.walk(root):
            for f in fns:
                out.append(os.path.relpath(os.path.join(dp, f), root))
        return sorted(out)


def db_connect(path: str) -> sqlite3.Connection:
    """A read-only connection (never writes the file; waits for the writer's lock briefly)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0, check_same_thread=False)
    conn.execute("PRAGMA query_only=1")
    return conn


# ---------------------------------------------------------------------------------------------
# Seeding


FILE_QUESTION = "photo"

REVIEW_DEFINITION = {
    "title": "Water point inspection",
    "questions": [
        {"id": "n", "type": "integer", "label": "People served", "required": True, "minimum": 0, "maximum": 100000},
        {"id": "source", "type": "select_one", "label": "Source", "choices": ["well", "piped", "river"]},
        {"id": "notes", "type": "text", "label": "Notes", "maxLength": 200},
        {"id": FILE_QUESTION, "type": "file", "label": "Photo", "accept": ["image/jpeg"], "maxBytes": 20_000_000},
    ],
}

PLAIN_DEFINITION = {
    "title": "Household count",
    "questions": [
        {"id": "n", "type": "integer", "label": "People", "required": True, "minimum": 0, "maximum": 100000},
        {"id": "notes", "type": "text", "label": "Notes", "maxLength": 200},
        {"id": FILE_QUESTION, "type": "file", "label": "Photo", "accept": ["image/jpeg"], "maxBytes": 20_000_000},
    ],
}


@dataclass
class User:
    user_id: str
    token: str
    name: str
    roles: list[str]


@dataclass
class Survey:
    survey_id: str
    version_id: str
    content_hash: str
    review_required: bool


@dataclass
class Org:
    org_id: str
    name: str
    operator: str
    admin: User
    collectors: list[User]
    reviewers: list[User]
    review_survey: Survey
    plain_survey: Survey
    extra: dict = field(default_factory=dict)

    @property
    def collector(self) -> User:
        return self.collectors[0]

    @property
    def reviewer(self) -> User:
        return self.reviewers[0]


class SeedError(RuntimeError):
    pass


def _expect(reply: Reply, status: int, what: str) -> Any:
    if reply.status != status:
        raise SeedError(f"{what}: expected {status}, got {reply.status} {reply.text[:300]}")
    return reply.json


def create_operator(server: ServerProcess) -> str:
    return server.cli_last_line("admin", "create-operator")


def create_user(server: ServerProcess, org_id: str, token: str, name: str, roles: list[str]) -> User:
    j = _expect(server.client().post(f"/v1/orgs/{org_id}/users", token=token, json={"name": name, "roles": roles}), 201,
                f"create user {name}")
    return User(j["userId"], j["token"], name, roles)


def publish_survey(server: ServerProcess, org_id: str, admin_token: str, title: str, review_required: bool,
                   definition: dict) -> Survey:
    c = server.client()
    s = _expect(c.post(f"/v1/orgs/{org_id}/surveys", token=admin_token, json={"title": title, "reviewRequired": review_required}),
                201, "create survey")
    v = _expect(c.post(f"/v1/orgs/{org_id}/surveys/{s['surveyId']}/versions", token=admin_token, json={"definition": definition}),
                201, "publish version")
    return Survey(s["surveyId"], v["surveyVersionId"], v["contentHash"], review_required)


def seed_org(server: ServerProcess, name: str = "Field team", collectors: int = 2, reviewers: int = 1,
             operator: Optional[str] = None, expires_in: float = 30 * 86400) -> Org:
    """Operator (CLI), org (CLI), admin (CLI), collectors and reviewers (API), a survey that
    requires review and one that does not, each with a published version whose question `photo`
    accepts image/jpeg."""
    op = operator or create_operator(server)
    org_id = server.cli_last_line("admin", "create-org", "--name", name, "--expires-at", iso_in(expires_in))
    admin_line = server.cli("admin", "create-user", "--org", org_id, "--name", f"{name} admin", "--roles", "admin").stdout.decode()
    lines = [l.strip() for l in admin_line.strip().splitlines() if l.strip()]
    admin_token = lines[-1]
    admin_id = next((l.split()[1] for l in lines if l.startswith("userId ")), "")
    admin = User(admin_id, admin_token, f"{name} admin", ["admin"])
    cols = [create_user(server, org_id, admin_token, f"{name} collector {i + 1}", ["collector"]) for i in range(collectors)]
    revs = [create_user(server, org_id, admin_token, f"{name} reviewer {i + 1}", ["reviewer"]) for i in range(reviewers)]
    review = publish_survey(server, org_id, admin_token, f"{name} inspections", True, REVIEW_DEFINITION)
    plain = publish_survey(server, org_id, admin_token, f"{name} counts", False, PLAIN_DEFINITION)
    return Org(org_id, name, op, admin, cols, revs, review, plain)


def set_subscription(server: ServerProcess, org: Org, active: bool) -> Reply:
    exp = iso_in(86400 * 30) if active else iso_in(-3600)
    return server.client().put(f"/v1/orgs/{org.org_id}/subscription", token=org.operator, json={"expiresAt": exp})


# ---------------------------------------------------------------------------------------------
# Reporting


class Checks:
    """Named pass/fail checks; `summary()` ends with `N passed, M failed`."""

    def __init__(self, title: str):
        self.title = title
        self.results: list[tuple[str, bool, str]] = []
        self.lock = threading.Lock()

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        with self.lock:
            self.results.append((name, bool(ok), detail))
        mark = "PASS" if ok else "FAIL"
        print(f"  [{mark}] {name}" + (f" — {detail}" if detail else ""), flush=True)
        return ok

    @property
    def passed(self) -> int:
        return sum(1 for _, ok, _ in self.results if ok)

    @property
    def failed(self) -> int:
        return sum(1 for _, ok, _ in self.results if not ok)

    def summary(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"

    def finish(self) -> int:
        print(f"{self.title}: {self.summary()}", flush=True)
        print(self.summary(), flush=True)
        return 0 if self.failed == 0 else 1


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


if __name__ == "__main__":
    # Smoke: start, seed, submit one response, stop.
    s = ServerProcess.fresh("smoke")
    s.start()
    try:
        o = seed_org(s)
        r = s.client().post(f"/v1/orgs/{o.org_id}/responses", token=o.collector.token,
                            json={"clientSubmissionId": new_id("smoke"), "surveyVersionId": o.plain_survey.version_id,
                                  "contentHash": o.plain_survey.content_hash, "answers": {"n": 3}})
        print(r.status, r.json)
        print("terminate ->", s.terminate())
    finally:
        s.remove()
