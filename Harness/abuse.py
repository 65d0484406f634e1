#!/usr/bin/env python3
"""Abuse: slow clients, malformed requests, a full disk and a corrupted database.

  slowloris   many connections send their headers (or bodies) a few bytes at a time; a normal
              client must still get every answer within a bound. Two rounds: within the
              server's connection limit, and past it (the classic single-source attack, from
              source address 127.0.0.2 while the normal client uses 127.0.0.1).
  malformed   10,000 malformed requests — random bytes, bad methods, bad JSON, huge headers,
              path traversal in ids, broken framing, bad credentials and client ids, numbers at
              and past the ends of Int64 (tus lengths and offsets, declared sizes, limits,
              expected revisions) — each must
              get a 4xx (pure garbage may instead see the connection closed), never a 5xx; the
              server keeps its pid, /healthz stays 200, no file appears outside its place.
  disk        the data dir on a 20 MiB tmpfs: filling it gives 503/1040 retryable with
              Retry-After, nothing partial (no row without its file, no file without its row,
              no temp file after a restart), and service resumes when space frees.
  framing     two different Content-Length headers are refused (no request smuggling).
  corrupt     bytes overwritten in the middle of surveyd.sqlite of a stopped server (and in
              its header, and in the root page of key tables): `surveyd serve` refuses to start
              with a clear message, exits non-zero, and every file is byte-identical afterwards.

  python3 Harness/abuse.py                          # everything, short form
  python3 Harness/abuse.py --only malformed --malformed 20000
  python3 Harness/abuse.py --only slowloris --slow-connections 1100
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surveyd_client import (FILE_QUESTION, Checks, Client, HTTPFailure, ServerProcess, build_request, db_connect,  # noqa: E402
                            free_port, iso_in, jpeg, log, new_id, read_reply, seed_org, sha256_hex, work_root)


# ---------------------------------------------------------------------------------------------
# slowloris


def slowloris(checks: Checks, a: argparse.Namespace) -> dict:
    server = ServerProcess.fresh("slowloris")
    server.start()
    org = seed_org(server, "Slow team", collectors=1, reviewers=0)
    figures: dict = {}
    try:
        for label, n in (("within the connection limit", a.slow_within), ("past the connection limit", a.slow_connections)):
            figures[label] = _slow_round(server, org, checks, label, n, a)
        alive = server.running
        checks.check("slowloris: the server is still running (same pid)", alive)
        r = server.client(5).get("/healthz") if alive else None
        checks.check("slowloris: /healthz 200 once the slow clients are gone", r is not None and r.status == 200)
    finally:
        server.terminate()
        if checks.failed == 0 and not a.keep:
            server.remove()
    return figures


def _slow_round(server: ServerProcess, org, checks: Checks, label: str, n: int, a: argparse.Namespace) -> dict:
    socks: list[socket.socket] = []
    opened = 0
    refused = 0
    heads = [b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
             f"GET /v1/orgs/{org.org_id}/subscription HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {org.collector.token}\r\n".encode(),
             # a slow body: the head is complete, the body never is
             (f"POST /v1/orgs/{org.org_id}/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {org.collector.token}\r\n"
              f"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{\"clientSubmissionId\":").encode(),
             (f"PUT /v1/orgs/{org.org_id}/uploads/{new_id('slow')} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {org.collector.token}\r\n"
              f"Content-Type: image/jpeg\r\nSurvey-Version-Id: {org.plain_survey.version_id}\r\nQuestion-Id: {FILE_QUESTION}\r\n"
              f"Content-Length: 5000000\r\n\r\n").encode() + jpeg(64)[:20]]
    t0 = time.monotonic()
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((a.slow_source, 0))
            s.settimeout(3)
            s.connect(("127.0.0.1", server.port))
            s.sendall(heads[i % len(heads)])
            s.setblocking(False)
            socks.append(s)
            opened += 1
        except OSError:
            refused += 1
            s.close()
    log(f"slowloris ({label}): {opened} slow connections open ({refused} refused) in {time.monotonic() - t0:.2f}s")
    latencies: list[float] = []
    failures: list[str] = []
    normal = Client(server.port, timeout=a.slow_bound + 1)
    sub_ok = 0
    end = time.monotonic() + a.slow_seconds
    k = 0
    while time.monotonic() < end:
        # keep every slow connection alive: one more header line / body byte each round
        for s in socks:
            try:
                s.send(b"X-Slow: 1\r\n" if k % 2 == 0 else b" ")
            except OSError:
                pass
        for path, token in (("/healthz", None), (f"/v1/orgs/{org.org_id}/subscription", org.collector.token)):
            t = time.monotonic()
            try:
                r = normal.get(path, token=token)
                dt = time.monotonic() - t
                latencies.append(dt)
                if r.status != 200:
                    failures.append(f"{path}: {r.status}")
            except HTTPFailure as e:
                latencies.append(time.monotonic() - t)
                failures.append(f"{path}: {e}")
        t = time.monotonic()
        try:
            r = normal.post(f"/v1/orgs/{org.org_id}/responses", token=org.collector.token,
                            json={"clientSubmissionId": new_id("norm"), "surveyVersionId": org.plain_survey.version_id,
                                  "contentHash": org.plain_survey.content_hash, "answers": {"n": k}})
            latencies.append(time.monotonic() - t)
            if r.status == 201:
                sub_ok += 1
            else:
                failures.append(f"submit: {r.status} {r.error_code}")
        except HTTPFailure as e:
            latencies.append(time.monotonic() - t)
            failures.append(f"submit: {e}")
        k += 1
        time.sleep(0.25)
    threads = _threads(server.pid)
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    worst = max(latencies) if latencies else 0.0
    lat_sorted = sorted(latencies)
    p50 = lat_sorted[len(lat_sorted) // 2] if lat_sorted else 0.0
    log(f"slowloris ({label}): {len(latencies)} normal requests, {len(failures)} failed, worst {worst * 1000:.0f} ms, "
        f"server threads {threads}")
    checks.check(f"slowloris {label} ({opened} slow connections): a normal client gets every answer within {a.slow_bound}s",
                 not failures and worst <= a.slow_bound,
                 f"{len(latencies)} requests, {len(failures)} failed, p50 {p50 * 1000:.1f} ms, worst {worst * 1000:.0f} ms"
                 + (f"; e.g. {failures[:3]}" if failures else ""))
    time.sleep(0.5)
    return {"slow_connections": opened, "refused": refused, "normal_requests": len(latencies), "failed": len(failures),
            "worst_ms": round(worst * 1000), "server_threads": threads}


def _threads(pid: Optional[int]) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


# ---------------------------------------------------------------------------------------------
# malformed requests


TRAVERSALS = [
    "..%2F..%2Fetc", "..%2F..%2F..%2Fetc%2Fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "..%5C..%5Cetc", "....%2F%2F....%2F%2Fetc",
    "%252e%252e%252fetc", "..%00", "%00", "..%c0%af..%c0%afetc", "..;%2Fetc", "%2Fetc%2Fpasswd", "..", ".", "...",
    "blobs%2F..%2F..%2Fsurveyd.sqlite", "..%2Fsurveyd.sqlite", "..%2F..%2Fsurveyd.sqlite", "tmp%2F..%2F..%2Fx",
    "%2e%2e", "a" * 300, "%ff%fe", "%u002e%u002e", "CON", "nul", "~root", "$(id)", "`id`", "'%20OR%201=1--",
    "%22%3E%3Cscript%3E", "x%0d%0aSet-Cookie:%20a=b",
]

BAD_JSON = [
    b"", b"{", b"}", b"[", b"nul", b"tru", b"{\"a\":}", b"{\"a\" 1}", b"{'a':1}", b"{\"a\":1,}", b"[1,2,]", b"{\"a\":01}",
    b"{\"a\":NaN}", b"{\"a\":Infinity}", b"{\"a\":-}", b"{\"a\":1e}", b"{\"a\":\"\\x\"}", b"{\"a\":\"\\ud800\"}",
    b"{\"a\":\"\xff\xfe\"}", b"\xef\xbb\xbf{}", b"{\"a\":1} trailing", b"{}{}", b"\x00\x00\x00", b"[]", b"\"str\"", b"42", b"null",
    b"true", b"{\"a\":\"unterminated", b"{\"a\":\"ctrl\x01char\"}", b"{\"" + b"k" * 5000 + b"\":", b"\t\n \r",
]


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


class Malformed:
    """Generates one malformed request at a time: (category, bytes, may_close)."""

    def __init__(self, org, other, rng: random.Random):
        self.org = org
        self.other = other
        self.rng = rng
        o = org.org_id
        self.id_routes = [
            ("GET", f"/v1/orgs/{o}/responses/{{id}}"), ("GET", f"/v1/orgs/{o}/responses/{{id}}/history"),
            ("POST", f"/v1/orgs/{o}/responses/{{id}}/review"), ("POST", f"/v1/orgs/{o}/responses/{{id}}/resubmit"),
            ("PUT", f"/v1/orgs/{o}/uploads/{{id}}"), ("GET", f"/v1/orgs/{o}/uploads/{{id}}"),
            ("GET", f"/v1/orgs/{o}/uploads/{{id}}/content"), ("GET", f"/v1/orgs/{o}/tasks/{{id}}"),
            ("GET", f"/v1/orgs/{o}/surveys/{{id}}"), ("POST", f"/v1/orgs/{o}/surveys/{{id}}/versions"),
            ("GET", f"/v1/orgs/{o}/survey-versions/{{id}}"), ("HEAD", f"/v1/orgs/{o}/uploads/resumable/{{id}}"),
            ("PATCH", f"/v1/orgs/{o}/uploads/resumable/{{id}}"), ("DELETE", f"/v1/orgs/{o}/uploads/resumable/{{id}}"),
            ("GET", "/v1/orgs/{id}/subscription"), ("PUT", "/v1/orgs/{id}/subscription"),
            ("POST", f"/v1/orgs/{o}/users/{{id}}/tokens"), ("DELETE", f"/v1/orgs/{o}/users/{{id}}"),
            ("PUT", f"/v1/orgs/{o}/users/{{id}}/roles"), ("GET", "/v1/orgs/{id}/changes"),
        ]
        self.json_routes = [
            ("POST", "/v1/orgs"), ("PUT", f"/v1/orgs/{o}/subscription"), ("POST", f"/v1/orgs/{o}/users"),
            ("PUT", f"/v1/orgs/{o}/users/{org.collector.user_id}/roles"), ("POST", f"/v1/orgs/{o}/surveys"),
            ("POST", f"/v1/orgs/{o}/surveys/{org.plain_survey.survey_id}/versions"), ("POST", f"/v1/orgs/{o}/responses"),
            ("POST", f"/v1/orgs/{o}/tasks"), ("POST", f"/v1/orgs/{o}/responses/{org.extra['response_id']}/review"),
            ("POST", f"/v1/orgs/{o}/responses/{org.extra['response_id']}/resubmit"),
        ]
        self.tokens = [org.operator, org.admin.token, org.collector.token, org.reviewer.token, other.admin.token]

    def token_for(self, method: str, path: str) -> str:
        # the role that may do it, so the body is what gets judged
        if path == "/v1/orgs" or path.endswith("/subscription"):
            return self.org.operator
        if path.endswith("/responses") or "/resubmit" in path or "/uploads" in path:
            return self.org.collector.token
        if "/review" in path:
            return self.org.reviewer.token
        return self.org.admin.token

    def req(self, method: str, path: str, token: Optional[str] = None, body: Optional[bytes] = None,
            headers: Optional[dict] = None, ctype: Optional[str] = "application/json") -> bytes:
        h = dict(headers or {})
        if ctype and body is not None and "Content-Type" not in h:
            h["Content-Type"] = ctype
        return build_request(method, path, 0, token, body=body, headers=h)

    def next(self) -> tuple[str, bytes, bool]:
        r = self.rng
        cat = r.choices(["random_bytes", "bad_method", "bad_json", "huge_headers", "traversal", "framing", "bad_auth",
                         "bad_client_id", "extreme_numbers"], weights=[12, 12, 22, 8, 22, 8, 8, 8, 8])[0]
        return cat, getattr(self, "gen_" + cat)(), cat in ("random_bytes", "framing", "huge_headers", "extreme_numbers")

    EXTREMES = ["9223372036854775807", "9223372036854775808", "18446744073709551615", "99999999999999999999999",
                "-1", "-9223372036854775808", "1e3", "0x10", ""]

    def gen_extreme_numbers(self) -> bytes:
        """Numbers at and past the ends of Int64 wherever a request carries one: tus lengths and
        offsets (also on an upload that already has bytes in, where offset + length can overflow),
        declared body sizes, list limits, expected revisions. (Not list cursors: any string is a
        valid `after` for the id-ordered lists, answered 200.)"""
        r = self.rng
        o = self.org.org_id
        v = r.choice(self.EXTREMES)
        col = self.org.collector.token
        tus = {"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}
        x = r.randrange(6)
        if x == 0:  # a chunk declaring an extreme size, at the right offset of an upload with bytes in
            head = f"PATCH {self.org.extra['tus_location']} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {col}\r\n"
            head += "".join(f"{k}: {val}\r\n" for k, val in tus.items())
            return (head + f"Upload-Offset: {self.org.extra['tus_offset']}\r\nContent-Length: {v}\r\n\r\n").encode()
        if x == 1:
            return self.req("PATCH", self.org.extra["tus_location"], col, b"x", headers={**tus, "Upload-Offset": v}, ctype=None)
        if x == 2:
            meta = ",".join(f"{k} {base64.b64encode(val.encode()).decode()}" for k, val in
                            {"clientUploadId": new_id("xtus"), "surveyVersionId": self.org.plain_survey.version_id,
                             "questionId": FILE_QUESTION, "contentType": "image/jpeg"}.items())
            return self.req("POST", f"/v1/orgs/{o}/uploads/resumable", col, b"",
                            headers={"Tus-Resumable": "1.0.0", "Upload-Length": v, "Upload-Metadata": meta}, ctype=None)
        if x == 3:
            head = (f"PUT /v1/orgs/{o}/uploads/{new_id('xput')} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {col}\r\n"
                    f"Content-Type: image/jpeg\r\nSurvey-Version-Id: {self.org.plain_survey.version_id}\r\n"
                    f"Question-Id: {FILE_QUESTION}\r\nContent-Length: {v}\r\n\r\n")
            return head.encode()
        if x == 4:
            route = r.choice(["responses", "changes", "tasks", "surveys"])
            return self.req("GET", f"/v1/orgs/{o}/{route}?limit={v}", self.org.admin.token)
        body = ('{"action":"approve","expectedRevision":%s}' % (v if v.strip().lstrip("-").isdigit() else '"%s"' % v)).encode()
        return self.req("POST", f"/v1/orgs/{o}/responses/{self.org.extra['response_id']}/review", self.org.reviewer.token, body)

    def gen_random_bytes(self) -> bytes:
        r = self.rng
        n = r.choice([1, 7, 64, 500, 4096, 20000])
        b = r.randbytes(n)
        if r.random() < 0.3:
            b = r.choice([b"GET ", b"POST /v1/", b"PUT /v1/orgs/x/uploads/", b"\x16\x03\x01\x02\x00\x01\x00"]) + b
        if r.random() < 0.3:
            b += b"\r\n\r\n"
        return b

    def gen_bad_method(self) -> bytes:
        r = self.rng
        m = r.choice(["FOO", "BREW", "get", "Post", "PROPFIND", "MKCOL", "TRACE", "CONNECT", "LINK", "X" * r.choice([20, 300, 3000]),
                      "G3T", "PUT\x00", "GE T", "SEARCH", "QUERY", "M-SEARCH", "PURGE", "DEBUG", "TRACK", "LOCK"])
        method, path = r.choice(self.json_routes + [(x, p.replace("{id}", "x12345678")) for x, p in self.id_routes])
        tok = self.token_for(method, path) if r.random() < 0.7 else None
        head = f"{m} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if tok:
            head += f"Authorization: Bearer {tok}\r\n"
        body = b'{"a":1}' if r.random() < 0.5 else b""
        head += f"Content-Length: {len(body)}\r\n\r\n"
        return head.encode("latin-1", "replace") + body

    def gen_bad_json(self) -> bytes:
        r = self.rng
        method, path = r.choice(self.json_routes)
        x = r.random()
        if x < 0.55:
            body = r.choice(BAD_JSON)
        elif x < 0.65:
            body = _nested(r.choice([100, 1000, 10_000, 100_000, 500_000]))
        elif x < 0.72:
            body = b'{"a":' * r.choice([1000, 50_000]) + b"1" + b"}" * 10
        elif x < 0.8:
            good = json.dumps({"clientSubmissionId": new_id("bad"), "surveyVersionId": self.org.plain_survey.version_id,
                               "contentHash": self.org.plain_survey.content_hash, "answers": {"n": 1}}).encode()
            cut = r.randint(1, len(good) - 1)
            body = good[:cut]
        elif x < 0.9:
            # JSON, but not the envelope's own fields / types
            body = r.choice([b'{"clientSubmissionId":5}', b'{"answers":"x"}', b'{"name":[]}', b'{"expiresAt":12}',
                             b'{"roles":"admin"}', b'{"action":null}', b'{"definition":"x"}', b'{"title":{}}',
                             b'{"expectedRevision":"1"}', b'{"expiresAt":"yesterday"}'])
        else:
            body = r.randbytes(r.choice([10, 200, 5000]))
        if path.endswith("/tokens"):
            body = body or b"{"
        ctype = r.choice(["application/json", "application/json; charset=utf-8", "text/plain", None])
        return self.req(method, path, self.token_for(method, path), body, ctype=ctype)

    def gen_huge_headers(self) -> bytes:
        """Heads far past any sane limit (every one over 64 KiB)."""
        r = self.rng
        o = self.org.org_id
        path = r.choice([f"/v1/orgs/{o}/subscription", "/healthz", f"/v1/orgs/{o}/responses"])
        x = r.random()
        head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if x < 0.3:
            head += "X-Big: " + "a" * r.choice([70_000, 300_000, 1_000_000]) + "\r\n"
        elif x < 0.5:
            head += "".join(f"X-H{i}: {'v' * 20}\r\n" for i in range(r.choice([3000, 8000])))
        elif x < 0.65:
            head = f"GET {path}?{'q=' + 'z' * r.choice([70_000, 400_000])} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        elif x < 0.8:
            head += "Authorization: Bearer " + "t" * r.choice([70_000, 200_000]) + "\r\n"
        elif x < 0.9:
            head += "Idempotency-Key: " + "k" * r.choice([70_000, 200_000]) + "\r\n"
        else:
            head += "Cookie: " + "; ".join(f"c{i}=v" for i in range(r.choice([12_000, 40_000]))) + "\r\n"
        return (head + "\r\n").encode()

    def gen_traversal(self) -> bytes:
        r = self.rng
        method, pattern = r.choice(self.id_routes)
        t = r.choice(TRAVERSALS)
        path = pattern.replace("{id}", t)
        tok = self.token_for(method, path)
        headers: dict = {}
        body: Optional[bytes] = None
        ctype = "application/json"
        if "/uploads/" in path and method == "PUT":
            body = jpeg(512)
            ctype = "image/jpeg"
            headers = {"Survey-Version-Id": r.choice([self.org.plain_survey.version_id, t, "../../etc"]),
                       "Question-Id": r.choice([FILE_QUESTION, "../../etc/passwd", t])}
            if headers["Survey-Version-Id"] == self.org.plain_survey.version_id and headers["Question-Id"] == FILE_QUESTION:
                pass  # the id in the path is the traversal
        elif "/resumable/" in path:
            headers = {"Tus-Resumable": "1.0.0", "Upload-Offset": "0"}
            ctype = "application/offset+octet-stream"
            body = b"x" * 10 if method == "PATCH" else None
        elif method in ("POST", "PUT"):
            body = r.choice([b"{}", b'{"action":"startReview","expectedRevision":1}', b'{"roles":["admin"]}',
                             b'{"expiresAt":"2030-01-01T00:00:00Z"}', b'{"definition":{"title":"x","questions":[]}}'])
        if r.random() < 0.15:
            # traversal in a tus creation's metadata instead
            enc = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
            meta = ",".join([f"clientUploadId {enc('../../' + t)}", f"surveyVersionId {enc(self.org.plain_survey.version_id)}",
                             f"questionId {enc(FILE_QUESTION)}", f"contentType {enc('image/jpeg')}"])
            return self.req("POST", f"/v1/orgs/{self.org.org_id}/uploads/resumable", self.org.collector.token, b"",
                            headers={"Tus-Resumable": "1.0.0", "Upload-Length": "100", "Upload-Metadata": meta}, ctype=None)
        return self.req(method, path, tok, body, headers=headers, ctype=ctype)

    def gen_framing(self) -> bytes:
        r = self.rng
        o = self.org.org_id
        tok = self.org.collector.token
        path = f"/v1/orgs/{o}/responses"
        x = r.choice(["neg_cl", "nan_cl", "huge_cl", "short_body", "bad_chunk", "http09", "bad_version", "cl_te",
                      "no_request_line", "bad_request_line"])
        if x == "neg_cl":
            return f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nContent-Length: -{r.randint(1, 99)}\r\n\r\n{{}}".encode()
        if x == "nan_cl":
            return f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nContent-Length: {r.choice(['abc', '1.5', '0x10', ' ', '1 2'])}\r\n\r\n{{}}".encode()
        if x == "huge_cl":
            return f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nContent-Length: {r.choice(['99999999999999999999999', '18446744073709551616', '9223372036854775807'])}\r\n\r\n{{}}".encode()
        if x == "short_body":  # fewer bytes than announced, then the client goes away
            return f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"clientSubmissionId\":\"".encode()
        if x == "bad_chunk":
            return (f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
                    + r.choice([b"zz\r\nabc\r\n0\r\n\r\n", b"fffffffffffffffffff\r\n", b"5\r\nabc\r\n", b"-1\r\n\r\n"]))
        if x == "http09":
            return b"GET /healthz\r\n\r\n"
        if x == "bad_version":
            return r.choice([b"GET /healthz HTTP/9.9\r\nHost: a\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                             b"GET /healthz HTTP/1.x\r\nHost: a\r\n\r\n", b"GET /healthz FTP/1.0\r\n\r\n"])
        if x == "cl_te":
            return (f"POST {path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\nContent-Length: 4\r\n"
                    f"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").encode()
        if x == "no_request_line":
            return b"\r\n\r\n"
        return r.choice([b"GET\r\n\r\n", b"GET /healthz HTTP/1.1 extra\r\n\r\n", b" / HTTP/1.1\r\n\r\n", b"GET  HTTP/1.1\r\n\r\n"])

    def gen_bad_auth(self) -> bytes:
        r = self.rng
        o = self.org.org_id
        method, path = r.choice([("GET", f"/v1/orgs/{o}/subscription"), ("POST", f"/v1/orgs/{o}/responses"),
                                 ("GET", f"/v1/orgs/{o}/responses"), ("GET", "/metrics"), ("POST", "/v1/orgs")])
        auth = r.choice(["Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer ", "bearer " + self.org.collector.token[:-1],
                         "Bearer " + self.org.collector.token + "x", "Bearer " + self.org.collector.token[:10],
                         "Bearer a b c", "Token " + self.org.collector.token, "Bearer \x7f\x7f", "Bearer ' OR 1=1 --",
                         "Bearer " + "0" * 64, "Bearer null", "Digest username=x"])
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: {auth}\r\n"
        body = b'{"a":1}' if method == "POST" else b""
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode("latin-1") + body

    def gen_bad_client_id(self) -> bytes:
        r = self.rng
        o = self.org.org_id
        bad = r.choice(["short", "a" * 129, "has space", "bad/slash", "uni\u00e9code", "semi;colon", "quote\"d", "", "tab\tid",
                        "percent%20", "x" * 5000, "\x00" * 9, "emoji\U0001F600xx"])
        x = r.random()
        if x < 0.4:
            body = json.dumps({"clientSubmissionId": bad, "surveyVersionId": self.org.plain_survey.version_id,
                               "contentHash": self.org.plain_survey.content_hash, "answers": {"n": 1}}).encode()
            return self.req("POST", f"/v1/orgs/{o}/responses", self.org.collector.token, body)
        if x < 0.7:
            enc = bad.encode("utf-8", "replace")
            path = f"/v1/orgs/{o}/uploads/" + "".join(c if c.isalnum() else f"%{b:02X}" for c, b in zip(bad, enc)) if bad else f"/v1/orgs/{o}/uploads/"
            return self.req("PUT", path, self.org.collector.token, jpeg(256),
                            headers={"Survey-Version-Id": self.org.plain_survey.version_id, "Question-Id": FILE_QUESTION},
                            ctype="image/jpeg")
        body = b'{"title":"t","surveyId":"x","assigneeUserId":"y"}'
        key = bad.encode("utf-8").decode("latin-1") if bad else '""'
        return self.req("POST", f"/v1/orgs/{o}/tasks", self.org.admin.token, body, headers={"Idempotency-Key": key})


def _send_malformed(port: int, data: bytes, timeout: float) -> tuple[Optional[int], Optional[bytes], Optional[dict], str]:
    """(status or None, body, headers, note)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server may answer (and close) before taking everything
            try:
                r = read_reply(s, head_only=data.startswith(b"HEAD "))
                return r.status, r.body, r.headers, ""
            except HTTPFailure as e:
                return None, None, None, str(e)
    except socket.timeout:
        return None, None, None, "timeout"
    except OSError as e:
        return None, None, None, f"{type(e).__name__}"


def malformed(checks: Checks, a: argparse.Namespace) -> dict:
    # The server runs in an empty working directory of its own, so a relative path it might be
    # tricked into writing lands somewhere we look.
    cwd = os.path.join(work_root(), f"malformed-cwd-{os.getpid()}")
    os.makedirs(cwd, exist_ok=True)
    server = ServerProcess.fresh("malformed", cwd=cwd)
    server.start()
    org = seed_org(server, "Abuse team", collectors=1, reviewers=1)
    other = seed_org(server, "Other team", collectors=1, reviewers=0, operator=org.operator)
    c = server.client()
    r = c.post(f"/v1/orgs/{org.org_id}/responses", token=org.collector.token,
               json={"clientSubmissionId": new_id("seed"), "surveyVersionId": org.review_survey.version_id,
                     "contentHash": org.review_survey.content_hash, "answers": {"n": 1}})
    org.extra["response_id"] = r.json["responseId"]
    # A resumable upload with bytes in, for the extreme_numbers category.
    meta = ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in
                    {"clientUploadId": new_id("tus"), "surveyVersionId": org.plain_survey.version_id,
                     "questionId": FILE_QUESTION, "contentType": "image/jpeg"}.items())
    t = c.request("POST", f"/v1/orgs/{org.org_id}/uploads/resumable", token=org.collector.token, body=b"",
                  headers={"Tus-Resumable": "1.0.0", "Upload-Length": "5000", "Upload-Metadata": meta})
    org.extra["tus_location"] = t.header("location")
    c.request("PATCH", org.extra["tus_location"], token=org.collector.token, body=jpeg(5000)[:100],
              headers={"Tus-Resumable": "1.0.0", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    org.extra["tus_offset"] = 100
    pid = server.pid
    outside_before = _snapshot_outside(server)
    inside_before = _tree(server.data_dir)
    counts: dict[str, dict] = {}
    violations: list[str] = []
    notes: dict[str, int] = {}
    samples: dict[str, str] = {}
    lock = threading.Lock()
    per_thread = a.malformed // a.malformed_threads
    t0 = time.monotonic()

    def worker(i: int) -> None:
        gen = Malformed(org, other, random.Random(a.seed * 31 + i))
        for _ in range(per_thread + (a.malformed % a.malformed_threads if i == 0 else 0)):
            cat, data, may_close = gen.next()
            status, body, headers, note = _send_malformed(server.port, data, a.malformed_timeout)
            with lock:
                cc = counts.setdefault(cat, {"sent": 0, "4xx": 0, "closed": 0, "5xx": 0, "2xx": 0, "other": 0})
                cc["sent"] += 1
                if status is None:
                    cc["closed"] += 1
                    if not may_close or note == "timeout":
                        violations.append(f"{cat}: no answer ({note}) to {data[:120]!r}")
                elif 400 <= status < 500:
                    cc["4xx"] += 1
                    ctype = (headers or {}).get("content-type", "")
                    if "problem+json" not in ctype:
                        n = f"{status} without problem+json (protocol level)"
                        notes[n] = notes.get(n, 0) + 1
                        samples.setdefault(n, f"{data[:90]!r} -> {(body or b'')[:90]!r}")
                    elif data.startswith(b"HEAD "):
                        pass  # a HEAD answer has no body
                    else:
                        try:
                            pj = json.loads(body)
                            if not isinstance(pj.get("errorCode"), int) or "retryable" not in pj:
                                violations.append(f"{cat}: problem body without errorCode/retryable: {body[:100]!r}")
                        except ValueError:
                            violations.append(f"{cat}: problem+json body is not JSON")
                elif status == 505 and not a.strict_505:
                    cc["other"] += 1
                    samples.setdefault("505", f"{data[:60]!r}")
                    notes["505 HTTP Version Not Supported (libmicrohttpd, for an unsupported version)"] = \
                        notes.get("505 HTTP Version Not Supported (libmicrohttpd, for an unsupported version)", 0) + 1
                elif status >= 500:
                    cc["5xx"] += 1
                    violations.append(f"{cat}: {status} {(body or b'')[:160]!r} for {data[:160]!r}")
                else:
                    cc["2xx" if status < 300 else "other"] += 1
                    violations.append(f"{cat}: {status} (accepted) {(body or b'')[:120]!r} for {data[:200]!r}")

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(a.malformed_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=a.time_limit)
    seconds = time.monotonic() - t0
    sent = sum(v["sent"] for v in counts.values())
    log(f"malformed: {sent} requests in {seconds:.1f}s")
    for cat, v in sorted(counts.items()):
        print(f"  {cat:14s} {v}")
    for n, k in notes.items():
        print(f"  note: {k} answers {n}; e.g. {samples.get(n, samples.get('505', ''))}")
    checks.check(f"malformed: {a.malformed} requests sent", sent >= a.malformed, str(sent))
    checks.check("malformed: every answer is a 4xx (or, for garbage and broken framing, a closed connection); never a 5xx or 2xx",
                 not violations, f"{len(violations)} bad; " + "; ".join(violations[:4]))
    checks.check("malformed: the server never died (same pid)", server.running and server.pid == pid)
    h = None
    try:
        h = c.get("/healthz")
    except HTTPFailure:
        pass
    checks.check("malformed: /healthz 200 afterwards", h is not None and h.status == 200)
    good = c.post(f"/v1/orgs/{org.org_id}/responses", token=org.collector.token,
                  json={"clientSubmissionId": new_id("after"), "surveyVersionId": org.plain_survey.version_id,
                        "contentHash": org.plain_survey.content_hash, "answers": {"n": 2}})
    checks.check("malformed: a normal submission still succeeds", good.status == 201, f"{good.status}")
    outside_after = _snapshot_outside(server)
    appeared = sorted(set(outside_after) - set(outside_before))
    checks.check("malformed: no file appeared outside the data dir (path traversal)", not appeared, str(appeared[:5]))
    inside_after = _tree(server.data_dir)
    stray = sorted(p for p in set(inside_after) - set(inside_before)
                   if not p.startswith("blobs/") and p not in ("surveyd.sqlite-wal", "surveyd.sqlite-shm"))
    time.sleep(0.5)
    checks.check("malformed: no stray file inside the data dir; tmp/ empty", not stray and not server.files("tmp"),
                 f"{stray[:5]} {server.files('tmp')[:5]}")
    rows = server.query("SELECT COUNT(*) FROM uploads")[0][0]
    checks.check("malformed: no upload was stored by a malformed request", rows == 0, f"{rows} rows")
    server.terminate()
    server.expect_check(checks, "malformed: surveyd check exits 0 afterwards")
    if checks.failed == 0 and not a.keep:
        server.remove()
        shutil.rmtree(cwd, ignore_errors=True)
    return {"sent": sent, "seconds": round(seconds, 1), "by_category": counts, "notes": notes, "samples": samples,
            "violations": len(violations), "violation_samples": violations[:20]}


def _tree(root: str) -> list[str]:
    out = []
    for dp, _, fns in os.walk(root):
        for f in fns:
            out.append(os.path.relpath(os.path.join(dp, f), root))
    return out


def _snapshot_outside(server: ServerProcess) -> list[str]:
    """Every file under the server's working directory and next to its data dir, and /etc's top level."""
    names = []
    for root in (server.cwd, os.path.dirname(server.data_dir)):
        if not root:
            continue
        for dp, dns, fns in os.walk(root):
            if os.path.abspath(dp).startswith(os.path.abspath(server.data_dir)):
                dns[:] = []
                continue
            dns[:] = [d for d in dns if not os.path.join(dp, d).startswith(os.path.abspath(server.data_dir))
                      and not d.startswith(("pids", "tmpfs-"))]
            names += [os.path.join(dp, f) for f in fns if not f.endswith((".log", ".out", ".json"))]
    names += [os.path.join("/etc", n) for n in os.listdir("/etc")]
    return names


# ---------------------------------------------------------------------------------------------
# request framing (RFC 9112 §6.3): one request is one request


def framing(checks: Checks, a: argparse.Namespace) -> dict:
    server = ServerProcess.fresh("framing")
    server.start()
    org = seed_org(server, "Framing team", collectors=1, reviewers=0)
    figures: dict = {}

    def exchange(data: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as c:
            c.sendall(data)
            c.shutdown(socket.SHUT_WR)
            out = b""
            while True:
                x = c.recv(65536)
                if not x:
                    return out
                out += x

    try:
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        body = b"{}" + smuggled
        for order in ("short first", "long first"):
            lengths = ["2", str(len(body))] if order == "short first" else [str(len(body)), "2"]
            req = (f"POST /v1/orgs/{org.org_id}/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {org.admin.token}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {lengths[0]}\r\nContent-Length: {lengths[1]}\r\n\r\n").encode() + body
            out = exchange(req)
            answers = out.count(b"HTTP/1.1 ")
            first = out.split(b"\r\n", 1)[0].decode(errors="replace")
            figures[order] = {"answers": answers, "first": first}
            checks.check(f"framing: two different Content-Length headers ({order}) are refused with 400, and nothing "
                         f"after them is taken as another request", answers == 1 and " 400 " in first + " ",
                         f"{answers} answer(s), first {first!r}" + ("; the body's tail was answered as a second request "
                                                                     "(request smuggling)" if answers > 1 else ""))
    finally:
        server.terminate()
        if checks.failed == 0 and not a.keep:
            server.remove()
    return figures


# ---------------------------------------------------------------------------------------------
# a full disk


def full_disk(checks: Checks, a: argparse.Namespace) -> dict:
    if os.geteuid() != 0:
        checks.check("disk: needs root to mount a tmpfs", False, "not root: skipped")
        return {"skipped": True}
    mnt = os.path.join(work_root(), f"tmpfs-{os.getpid()}")
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.disk_mib}m", "tmpfs", mnt], capture_output=True)
    if r.returncode != 0:
        checks.check("disk: mount a small tmpfs", False, r.stderr.decode(errors="replace"))
        return {"skipped": True}
    server = ServerProcess(os.path.join(mnt, "data"), log_path=mnt + ".log")
    figures: dict = {"tmpfs_mib": a.disk_mib}
    try:
        server.start()
        org = seed_org(server, "Disk team", collectors=1, reviewers=0)
        c = server.client()
        tok = org.collector.token
        sv = org.plain_survey

        def upload(cuid: str, content: bytes) -> "Reply":
            return c.request("PUT", f"/v1/orgs/{org.org_id}/uploads/{cuid}", token=tok, body=content,
                             headers={"Content-Type": "image/jpeg", "Survey-Version-Id": sv.version_id, "Question-Id": FILE_QUESTION})

        def submit(csid: str, n: int):
            return c.post(f"/v1/orgs/{org.org_id}/responses", token=tok,
                          json={"clientSubmissionId": csid, "surveyVersionId": sv.version_id, "contentHash": sv.content_hash,
                                "answers": {"n": n, "notes": "x" * 150}})

        accepted_up: dict[str, str] = {}
        refused_up: dict[str, bytes] = {}
        accepted_sub: dict[str, str] = {}
        refused_sub: dict[str, int] = {}  # clientSubmissionId -> n (the body is rebuilt identically)
        bad: list[str] = []
        answers: dict[str, int] = {}

        def judge(what: str, rep) -> bool:
            key = f"{rep.status}/{rep.error_code}"
            answers[key] = answers.get(key, 0) + 1
            if rep.status in (200, 201):
                return True
            if rep.status == 503 and rep.error_code == 1040 and rep.json.get("retryable") is True and rep.header("retry-after"):
                return False
            bad.append(f"{what}: {rep.status} {rep.text[:160]}")
            return False

        # Ballast takes 40% of the disk now and is removed at the end: that is the space that frees.
        ballast = os.path.join(mnt, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\0" * (a.disk_mib * (1 << 20) * 2 // 5))
        # 1. fill with 1 MiB files, a submission after each, until uploads are refused for a while
        i = 0
        refusals_in_a_row = 0
        while refusals_in_a_row < 4 and i < a.disk_mib * 3:
            i += 1
            cuid = new_id("disk")
            content = jpeg(1 << 20, seed=i)
            try:
                rep = upload(cuid, content)
            except HTTPFailure as e:
                bad.append(f"upload {i}: no answer ({e})")
                break
            if judge(f"upload {i}", rep):
                accepted_up[cuid] = sha256_hex(content)
                refusals_in_a_row = 0
            else:
                refused_up[cuid] = content
                refusals_in_a_row += 1
            csid = new_id("dsub")
            rep = submit(csid, i)
            if judge(f"submission {i}", rep):
                accepted_sub[csid] = rep.json["responseId"]
            else:
                refused_sub[csid] = i
        # 2. take the last bytes with a filler file: now the database cannot grow either
        # (When the uploads left not even room for the filler's directory entry, the disk is full already.)
        filler = os.path.join(mnt, "filler")
        try:
            with open(filler, "wb") as f:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        except OSError:
            pass
        for k in range(30):
            csid = new_id("dfull")
            rep = submit(csid, 10_000 + k)
            if judge(f"submission while full {k}", rep):
                accepted_sub[csid] = rep.json["responseId"]
            else:
                refused_sub[csid] = 10_000 + k
            cuid = new_id("dfullup")
            content = jpeg(8192, seed=10_000 + k)
            rep = upload(cuid, content)
            if judge(f"small upload while full {k}", rep):
                accepted_up[cuid] = sha256_hex(content)
            else:
                refused_up[cuid] = content
        figures.update({"uploads_accepted": len(accepted_up), "uploads_refused": len(refused_up),
                        "submissions_accepted": len(accepted_sub), "submissions_refused": len(refused_sub), "answers": answers})
        log(f"disk: answers while filling {answers}")
        checks.check("disk: filling the disk gives 503/1040 retryable with Retry-After, never another error", not bad,
                     "; ".join(bad[:3]))
        checks.check("disk: uploads were refused with 1040 once full", len(refused_up) > 0, f"{len(refused_up)} refused")
        checks.check("disk: submissions were refused with 1040 once the database could not grow", len(refused_sub) > 0,
                     f"{len(refused_sub)} refused")
        reads_ok = c.get(f"/v1/orgs/{org.org_id}/subscription", token=tok).status == 200 and c.get("/healthz").status == 200
        checks.check("disk: reads and /healthz still answer 200 while full", reads_ok)
        ready = c.get("/readyz")
        figures["readyz_while_full"] = ready.status
        checks.check("disk: /readyz is not 200 while the database cannot take writes (contract: ready = database writable)",
                     ready.status != 200, f"/readyz {ready.status} {ready.text[:80]} while submissions answer 503/1040")

        # 3. nothing partial while full
        time.sleep(0.3)
        conn = db_connect(server.db_path)
        try:
            ups = dict(conn.execute("SELECT client_upload_id, sha256 FROM uploads").fetchall())
            subs = dict(conn.execute("SELECT client_submission_id, response_id FROM responses").fetchall())
        finally:
            conn.close()
        present_refused = [k for k in refused_up if k in ups] + [k for k in refused_sub if k in subs]
        missing = [k for k, v in accepted_up.items() if ups.get(k) != v] + [k for k, v in accepted_sub.items() if subs.get(k) != v]
        checks.check("disk: no refused request left a row; every accepted one is there", not present_refused and not missing,
                     f"present {present_refused[:3]}, missing {missing[:3]}")
        blob_names = {os.path.basename(p) for p in server.files("blobs")}
        orphan = sorted(blob_names - set(ups.values()))
        no_file = sorted(set(ups.values()) - blob_names)
        checks.check("disk: no blob without its row and no row without its blob", not orphan and not no_file,
                     f"orphans {orphan[:3]}, missing {no_file[:3]}")
        checks.check("disk: no temp file left by refused uploads", not server.files("tmp"), str(server.files("tmp")[:5]))

        # 4. kill -9 mid-upload while full, restart while full
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall((f"PUT /v1/orgs/{org.org_id}/uploads/{new_id('killed')} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {tok}\r\n"
                   f"Content-Type: image/jpeg\r\nSurvey-Version-Id: {sv.version_id}\r\nQuestion-Id: {FILE_QUESTION}\r\n"
                   f"Content-Length: 3000000\r\n\r\n").encode() + jpeg(4096))
        time.sleep(0.2)
        server.kill9()
        s.close()
        try:
            server.start(timeout=15)
            restarted_full = True
        except RuntimeError as e:
            restarted_full = False
            figures["restart_while_full"] = str(e)[:200]
        figures["restarted_while_full"] = restarted_full
        checks.check("disk: surveyd starts again while the disk is still full (and serves reads)",
                     restarted_full and server.client().get(f"/v1/orgs/{org.org_id}/subscription", token=tok).status == 200,
                     server.tail_log(300).strip().splitlines()[-1] if not restarted_full else "")
        if restarted_full:
            checks.check("disk: no temp file after the restart", not server.files("tmp"), str(server.files("tmp")[:5]))

        # 5. space frees: the refused requests, sent again unchanged, succeed exactly once
        os.unlink(filler)
        os.unlink(ballast)
        if not server.running:
            server.start()
        c = server.client()
        bad = []
        for cuid, content in refused_up.items():
            rep = upload(cuid, content)
            if rep.status != 201:
                bad.append(f"upload {cuid}: {rep.status} {rep.error_code}")
        checks.check("disk: after space frees, every refused upload succeeds on retry (201)", not bad, "; ".join(bad[:3]))
        resent = 0
        for csid, n in refused_sub.items():
            rep = submit(csid, n)  # the identical request
            if rep.status == 201:
                resent += 1
        checks.check("disk: after space frees, every refused submission is accepted (201, not a replay)",
                     resent == len(refused_sub), f"{resent} of {len(refused_sub)}")
        ready_after = c.get("/readyz")
        checks.check("disk: /readyz is 200 again once space frees", ready_after.status == 200, f"{ready_after.status}")
        again = [cuid for cuid, content in list(refused_up.items())[:5] if upload(cuid, content).status != 200]
        checks.check("disk: the same uploads once more are replays (200)", not again, str(again))
        server.terminate()
        server.expect_check(checks, "disk: surveyd check exits 0")
        conn = db_connect(server.db_path)
        try:
            dups = conn.execute("SELECT COUNT(*) FROM (SELECT client_upload_id FROM uploads GROUP BY org_id, client_upload_id HAVING COUNT(*)>1)").fetchone()[0]
        finally:
            conn.close()
        checks.check("disk: each id stored once", dups == 0)
    finally:
        server.kill9()
        subprocess.run(["umount", mnt], capture_output=True)
        if subprocess.run(["mountpoint", "-q", mnt]).returncode == 0:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return figures


# ---------------------------------------------------------------------------------------------
# a corrupted database


def _hash_tree(root: str) -> dict[str, tuple[int, str, int]]:
    out = {}
    for rel in _tree(root):
        p = os.path.join(root, rel)
        with open(p, "rb") as f:
            data = f.read()
        st = os.stat(p)
        out[rel] = (len(data), hashlib.sha256(data).hexdigest(), st.st_mtime_ns)
    return out


def corrupt(checks: Checks, a: argparse.Namespace) -> dict:
    base = ServerProcess.fresh("cdb")
    base.start()
    org = seed_org(base, "Corrupt team", collectors=1, reviewers=1)
    c = base.client()
    for i in range(a.corrupt_rows):
        c.post(f"/v1/orgs/{org.org_id}/responses", token=org.collector.token,
               json={"clientSubmissionId": new_id("cr"), "surveyVersionId": org.review_survey.version_id,
                     "contentHash": org.review_survey.content_hash, "answers": {"n": i, "notes": "n" * 150}})
    for i in range(5):
        c.request("PUT", f"/v1/orgs/{org.org_id}/uploads/{new_id('cu')}", token=org.collector.token, body=jpeg(20_000, seed=i),
                  headers={"Content-Type": "image/jpeg", "Survey-Version-Id": org.plain_survey.version_id, "Question-Id": FILE_QUESTION})
    base.terminate()
    # Fold the WAL into the main file so the corruption below is what the server will read.
    w = sqlite3.connect(base.db_path)
    w.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = {name: root for name, root in w.execute("SELECT name, rootpage FROM sqlite_master WHERE type IN ('table','index')")}
    page_size = w.execute("PRAGMA page_size").fetchone()[0]
    w.close()
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(base.db_path + suffix)
        except OSError:
            pass
    size = os.path.getsize(base.db_path)
    log(f"corrupt: database {size} bytes, {size // page_size} pages of {page_size}")
    def leaf(name: str) -> int:
        """The byte offset of the last 64 bytes of a leaf page of `name` (its cell content)."""
        w = sqlite3.connect(f"file:{base.db_path}?immutable=1", uri=True)
        try:
            row = w.execute("SELECT pageno FROM dbstat WHERE name=? AND pagetype='leaf' ORDER BY pageno LIMIT 1 OFFSET 1",
                            (name,)).fetchone() or w.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (name,)).fetchone()
        finally:
            w.close()
        return row[0] * page_size - 64

    variants = [("the middle of the file", (size // page_size // 2) * page_size, page_size),
                ("the file header", 0, 100),
                ("the root page of uploads", (pages["uploads"] - 1) * page_size, page_size),
                ("the root page of responses", (pages["responses"] - 1) * page_size, page_size),
                ("the root page of tokens", (pages["tokens"] - 1) * page_size, page_size),
                ("64 bytes of a leaf page of the index audit_feed", leaf("audit_feed"), 64),
                ("64 bytes of a leaf page of the responses table", leaf("responses"), 64)]
    figures = {"db_bytes": size, "variants": []}
    rng = random.Random(8128)  # the same damage every run
    # Control: the intact copy starts and serves (so a refusal below is about the corruption).
    ctl = ServerProcess(base.data_dir + "-control")
    shutil.copytree(base.data_dir, ctl.data_dir)
    try:
        ctl.start(timeout=15)
        checks.check("corrupt: the intact database starts and serves (control)", True)
    except RuntimeError as e:
        checks.check("corrupt: the intact database starts and serves (control)", False, str(e)[:200])
    finally:
        ctl.terminate()
        shutil.rmtree(ctl.data_dir, ignore_errors=True)
    for label, offset, length in variants:
        d = ServerProcess(base.data_dir + "-" + re.sub(r"\W+", "-", label).strip("-"))
        shutil.copytree(base.data_dir, d.data_dir)
        # SQLite keeps no checksums: bytes that land in a page's free space change nothing it can
        # see. Move the damage until SQLite's own integrity_check (on a scratch copy) sees it.
        with open(d.db_path, "rb") as f:
            pristine = f.read()
        tries = 0
        while True:
            tries += 1
            data = bytearray(pristine)
            data[offset:offset + length] = rng.randbytes(length)
            seen = _sqlite_sees_damage(bytes(data))
            if not seen and tries < 40:
                offset = (offset + page_size) % max(page_size, size - page_size) if length >= page_size \
                    else rng.randrange(size // 3, 2 * size // 3)
                continue
            break
        if not seen:
            print(f"  note: corrupt ({label}): 40 placements of the damage were all invisible to SQLite; variant skipped")
            shutil.rmtree(d.data_dir, ignore_errors=True)
            continue
        with open(d.db_path, "r+b") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        before = _hash_tree(d.data_dir)
        port = free_port()
        p = subprocess.Popen([d.binary, "serve", "--data-dir", d.data_dir, "--port", str(port), "--no-log"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        served = False
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and p.poll() is None:
            try:
                if Client(port, 1).get("/healthz").status == 200:
                    served = True
                    break
            except HTTPFailure:
                time.sleep(0.05)
        if p.poll() is None:
            p.kill()
        out, err = p.communicate()
        rc = p.returncode
        msg = (err + out).decode(errors="replace").strip()
        after = _hash_tree(d.data_dir)
        changed = sorted(k for k in before if k not in after or after[k][:2] != before[k][:2])
        created = sorted(f"{k} ({after[k][0]} bytes)" for k in after if k not in before)
        clear = bool(re.search(r"corrupt|malformed|not a database|integrity|damaged", msg.replace(d.data_dir, "DIR"), re.I))
        figures["variants"].append({"where": label, "offset": offset, "bytes": length, "placements_tried": tries, "served": served, "exit": rc, "message": msg[-300:], "changed": changed,
                                    "created": created})
        checks.check(f"corrupt ({label}): surveyd serve refuses to start and exits non-zero",
                     not served and rc not in (0, None) and rc != -9,
                     "it served /healthz 200" if served else f"exit {rc}")
        checks.check(f"corrupt ({label}): with a clear message", clear, msg[-200:].replace("\n", " | "))
        checks.check(f"corrupt ({label}): every file byte-identical afterwards (database, blobs)", not changed,
                     f"changed/removed {changed[:5]}" + (f"; note: created {created}" if created else ""))
        if d.binary and _has(d.binary, "check"):
            crc, report = d.check()
            after2 = _hash_tree(d.data_dir)
            changed2 = sorted(k for k in after if k not in after2 or after2[k][:2] != after[k][:2])
            checks.check(f"corrupt ({label}): surveyd check exits 1 with a report and changes nothing",
                         crc == 1 and not changed2 and len(report.strip()) > 0,
                         f"exit {crc}: {report.strip().splitlines()[0] if report.strip() else ''}")
        if checks.failed == 0 and not a.keep:
            shutil.rmtree(d.data_dir, ignore_errors=True)
    if checks.failed == 0 and not a.keep:
        base.remove()
    return figures


def _sqlite_sees_damage(db: bytes) -> bool:
    """integrity_check on a scratch copy opened immutable (creates no -wal/-shm)."""
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".sqlite")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(db)
        try:
            conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
            try:
                rows = conn.execute("PRAGMA integrity_check").fetchall()
            finally:
                conn.close()
            return rows != [("ok",)]
        except sqlite3.DatabaseError:
            return True
    finally:
        os.unlink(path)


_has_cache: dict = {}


def _has(binary: str, cmd: str) -> bool:
    if (binary, cmd) not in _has_cache:
        r = subprocess.run([binary, "help"], capture_output=True)
        _has_cache[(binary, cmd)] = f"surveyd {cmd}" in r.stdout.decode(errors="replace")
    return _has_cache[(binary, cmd)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="slowloris,malformed,framing,disk,corrupt")
    p.add_argument("--slow-within", type=int, default=600, help="slow connections in the first round")
    p.add_argument("--slow-connections", type=int, default=1100, help="slow connections in the second round (past the limit)")
    p.add_argument("--slow-source", default="127.0.0.2", help="source address of the slow clients (loopback)")
    p.add_argument("--slow-seconds", type=float, default=6.0)
    p.add_argument("--slow-bound", type=float, default=2.0, help="seconds within which a normal client must be answered")
    p.add_argument("--malformed", type=int, default=10_000)
    p.add_argument("--malformed-threads", type=int, default=6)
    p.add_argument("--malformed-timeout", type=float, default=10.0)
    p.add_argument("--strict-505", action="store_true", help="count libmicrohttpd's 505 for unsupported HTTP versions as a violation")
    p.add_argument("--disk-mib", type=int, default=20)
    p.add_argument("--corrupt-rows", type=int, default=400)
    p.add_argument("--time-limit", type=float, default=240.0)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--json-out")
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    checks = Checks("abuse")
    figures: dict = {}
    parts = [x.strip() for x in a.only.split(",") if x.strip()]
    for part in parts:
        log(f"abuse: {part}")
        fn = {"slowloris": slowloris, "malformed": malformed, "framing": framing, "disk": full_disk, "corrupt": corrupt}[part]
        try:
            figures[part] = fn(checks, a)
        except Exception as e:  # noqa: BLE001 — a crash of one part is a failed check, not a lost run
            import traceback
            traceback.print_exc()
            checks.check(f"{part}: ran to the end", False, f"{type(e).__name__}: {e}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"figures": figures, "passed": checks.passed, "failed": checks.failed}, f, indent=2, default=str)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
