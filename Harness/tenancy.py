#!/usr/bin/env python3
"""The cross-tenant matrix: every route × organization (own, other, nonexistent) × id (here,
another organization's, nonexistent) × caller (operator, admin, the collector who owns the
thing, another collector, reviewer, another organization's admin and collector, no token, a bad
token), once with both subscriptions active and once with both expired.

The contract's answers:
  - a caller outside the organization (or an organization that does not exist) gets exactly the
    404/1005 of a nonexistent organization — the same bytes, active or expired;
  - inside it, another organization's id gets exactly the answer of a nonexistent id;
  - on its own thing, a role may do it (2xx, or the validation answer of the harmless body sent),
    may not (403/1006), or may not know it exists (404/1005, the same bytes as a nonexistent id);
  - no token or a bad token: 401/1007, the same everywhere;
  - never a 5xx; every error is problem+json with errorCode;
  - no body carries another organization's ids or data (nor, to a collector, another collector's).

Write routes get bodies that fail validation (so an allowed caller gets 400/422 and nothing
changes); DELETE routes get fresh targets that are replaced once consumed.

  python3 Harness/tenancy.py
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from surveyd_client import (FILE_QUESTION, Checks, Client, HTTPFailure, Org, Reply, ServerProcess, User, build_request,  # noqa: E402
                            create_user, iso_in, jpeg, log, new_id, seed_org)

NONE_ORG = "org_00000000-0000-7000-8000-000000000000"
NONE_IDS = {
    "response": "rsp_00000000-0000-7000-8000-000000000000", "upload": "nonexistent-upload-0001",
    "task": "tsk_00000000-0000-7000-8000-000000000000", "survey": "srv_00000000-0000-7000-8000-000000000000",
    "version": "sv_00000000-0000-7000-8000-000000000000", "tus": "tus_00000000-0000-7000-8000-000000000000",
    "user": "usr_00000000-0000-7000-8000-000000000000", "csid": "nonexistent-submission-0001",
    "token": "tok_00000000-0000-7000-8000-000000000000",
}

A, H, F, FH = "allow", "hidden", "forbid", "forbid_or_hidden"


@dataclass
class Route:
    name: str
    method: str
    path: str                      # {org}, {id}, {id2}
    id_kind: Optional[str] = None
    table: dict = field(default_factory=dict)  # role kind -> A/H/F/FH; missing = F
    body: Optional[bytes] = None
    headers: dict = field(default_factory=dict)
    has_org: bool = True
    public: bool = False           # no authentication at all
    consumes: bool = False         # an allowed call uses its target up
    all404: bool = False           # every caller gets the same 404/1005 (an unknown route)


MEMBERS = {"admin": A, "owner": A, "collector2": A, "reviewer": A, "operator": FH}
ROUTES = [
    Route("create org", "POST", "/v1/orgs", None, {"operator": A}, b"{}", has_org=False),
    Route("get subscription", "GET", "/v1/orgs/{org}/subscription", None, {**MEMBERS, "operator": A}),
    Route("put subscription", "PUT", "/v1/orgs/{org}/subscription", None, {"operator": A}, b"{}"),
    Route("create user", "POST", "/v1/orgs/{org}/users", None, {"admin": A, "operator": A}, b"{}"),
    Route("create token", "POST", "/v1/orgs/{org}/users/{id}/tokens", "user", {"admin": A, "operator": A}, b""),
    Route("revoke token", "DELETE", "/v1/orgs/{org}/users/{id}/tokens/{id2}", "usertoken", {"admin": A, "operator": A},
          consumes=True),
    Route("deactivate user", "DELETE", "/v1/orgs/{org}/users/{id}", "user", {"admin": A, "operator": A}, consumes=True),
    Route("set roles", "PUT", "/v1/orgs/{org}/users/{id}/roles", "user", {"admin": A, "operator": A}, b'{"roles":["wizard"]}'),
    Route("create survey", "POST", "/v1/orgs/{org}/surveys", None, {"admin": A, "operator": FH}, b"{}"),
    Route("list surveys", "GET", "/v1/orgs/{org}/surveys", None, MEMBERS),
    Route("get survey", "GET", "/v1/orgs/{org}/surveys/{id}", "survey", MEMBERS),
    Route("publish version", "POST", "/v1/orgs/{org}/surveys/{id}/versions", "survey", {"admin": A, "operator": FH}, b"{}"),
    Route("get version", "GET", "/v1/orgs/{org}/survey-versions/{id}", "version", MEMBERS),
    Route("submit response", "POST", "/v1/orgs/{org}/responses", None, {"owner": A, "collector2": A, "operator": FH}, b"{}"),
    Route("list responses", "GET", "/v1/orgs/{org}/responses", None, MEMBERS),
    Route("list responses by state", "GET", "/v1/orgs/{org}/responses?reviewState=submitted&limit=500", None, MEMBERS),
    Route("reconcile by clientSubmissionId", "GET", "/v1/orgs/{org}/responses?clientSubmissionId={id}", "csid",
          {"owner": A, "collector2": H, "admin": H, "reviewer": H, "operator": FH}),
    Route("get response", "GET", "/v1/orgs/{org}/responses/{id}", "response",
          {"owner": A, "admin": A, "reviewer": A, "collector2": H, "operator": FH}),
    Route("review", "POST", "/v1/orgs/{org}/responses/{id}/review", "response",
          {"reviewer": A, "admin": F, "owner": F, "collector2": H, "operator": FH}, b"{}"),
    Route("resubmit", "POST", "/v1/orgs/{org}/responses/{id}/resubmit", "response",
          {"owner": A, "admin": F, "reviewer": F, "collector2": H, "operator": FH}, b"{}"),
    Route("history", "GET", "/v1/orgs/{org}/responses/{id}/history", "response",
          {"owner": A, "admin": A, "reviewer": A, "collector2": H, "operator": FH}),
    Route("put upload", "PUT", "/v1/orgs/{org}/uploads/{id}", "upload", {"owner": A, "collector2": A, "operator": FH},
          b"not a jpeg at all", {"Content-Type": "image/jpeg", "Question-Id": FILE_QUESTION, "Survey-Version-Id": "{version}"}),
    Route("upload metadata", "GET", "/v1/orgs/{org}/uploads/{id}", "upload",
          {"owner": A, "admin": A, "reviewer": A, "collector2": H, "operator": FH}),
    Route("upload content", "GET", "/v1/orgs/{org}/uploads/{id}/content", "upload",
          {"owner": A, "admin": A, "reviewer": A, "collector2": H, "operator": FH}),
    Route("tus options", "OPTIONS", "/v1/orgs/{org}/uploads/resumable", None, public=True, headers={"Tus-Resumable": "1.0.0"}),
    Route("tus create", "POST", "/v1/orgs/{org}/uploads/resumable", None, {"owner": A, "collector2": A, "operator": FH}, b"",
          {"Tus-Resumable": "1.0.0"}),
    Route("tus head", "HEAD", "/v1/orgs/{org}/uploads/resumable/{id}", "tus",
          {"owner": A, "collector2": H, "admin": FH, "reviewer": FH, "operator": FH}, None, {"Tus-Resumable": "1.0.0"}),
    Route("tus patch", "PATCH", "/v1/orgs/{org}/uploads/resumable/{id}", "tus",
          {"owner": A, "collector2": H, "admin": FH, "reviewer": FH, "operator": FH}, b"xyz",
          {"Tus-Resumable": "1.0.0", "Upload-Offset": "99999999", "Content-Type": "application/offset+octet-stream"}),
    Route("tus terminate", "DELETE", "/v1/orgs/{org}/uploads/resumable/{id}", "tus",
          {"owner": A, "collector2": H, "admin": FH, "reviewer": FH, "operator": FH}, None, {"Tus-Resumable": "1.0.0"}, consumes=True),
    Route("create task", "POST", "/v1/orgs/{org}/tasks", None, {"admin": A, "operator": FH}, b"{}"),
    Route("list tasks", "GET", "/v1/orgs/{org}/tasks", None, MEMBERS),
    Route("get task", "GET", "/v1/orgs/{org}/tasks/{id}", "task",
          {"owner": A, "admin": A, "reviewer": A, "collector2": H, "operator": FH}),
    Route("changes", "GET", "/v1/orgs/{org}/changes", None, MEMBERS),
    Route("metrics", "GET", "/metrics", None, {"operator": A}, has_org=False),
    Route("healthz", "GET", "/healthz", None, public=True, has_org=False),
    Route("readyz", "GET", "/readyz", None, public=True, has_org=False),
    Route("unknown route", "GET", "/v1/orgs/{org}/no-such-thing", None, {}, all404=True),
    Route("unknown route, no org", "GET", "/v1/no-such-thing", None, {}, has_org=False, all404=True),
]


@dataclass
class Caller:
    name: str
    token: Optional[str]
    home: Optional[str]     # "A", "B", or None (operator, anonymous)
    kind: str               # admin, owner, collector2, reviewer, operator, anonymous


class Matrix:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.server = ServerProcess.fresh("tenancy")
        self.results: dict[tuple, dict] = {}
        self.problems: list[str] = []
        self.requests = 0

    # -- setup -----------------------------------------------------------------------------

    def setup(self) -> None:
        s = self.server
        s.start()
        A_ = seed_org(s, "Alpha team", collectors=2, reviewers=1)
        B_ = seed_org(s, "Bravo team", collectors=2, reviewers=1, operator=A_.operator)
        self.orgs = {"A": A_, "B": B_}
        self.op = A_.operator
        self.things: dict[str, dict] = {}
        self.secrets: dict[str, set] = {}
        self.owner_secrets: dict[str, set] = {}
        for key, o in self.orgs.items():
            self.things[key] = self.make_things(o, key)
        for key, o in self.orgs.items():
            t = self.things[key]
            sec = {o.org_id, o.name, o.admin.user_id, o.admin.token, o.review_survey.survey_id, o.review_survey.version_id,
                   o.plain_survey.survey_id, o.plain_survey.version_id, f"{o.name} inspections", f"{o.name} counts",
                   t["response"], t["csid"], t["upload"], t["task"], t["tus"], t["marker"], t["task_title"]}
            for u in o.collectors + o.reviewers:
                sec |= {u.user_id, u.token, u.name}
            self.secrets[key] = sec
            # what the owning collector has that the other collector of the same org must not see
            self.owner_secrets[key] = {t["response"], t["csid"], t["upload"], t["task"], t["tus"], t["marker"], t["task_title"]}
        self.callers = [
            Caller("operator", self.op, None, "operator"),
            Caller("A admin", self.orgs["A"].admin.token, "A", "admin"),
            Caller("A collector (owner)", self.orgs["A"].collectors[0].token, "A", "owner"),
            Caller("A other collector", self.orgs["A"].collectors[1].token, "A", "collector2"),
            Caller("A reviewer", self.orgs["A"].reviewer.token, "A", "reviewer"),
            Caller("B admin", self.orgs["B"].admin.token, "B", "admin"),
            Caller("B collector (owner)", self.orgs["B"].collectors[0].token, "B", "owner"),
            Caller("no token", None, None, "anonymous"),
            Caller("bad token", "bad-" + "x" * 60, None, "anonymous"),
        ]

    def make_things(self, o: Org, key: str) -> dict:
        c = self.server.client()
        owner = o.collectors[0]
        marker = f"secret-note-{key}-{new_id('m')}"
        csid = new_id(f"csid{key}")
        r = c.post(f"/v1/orgs/{o.org_id}/responses", token=owner.token,
                   json={"clientSubmissionId": csid, "surveyVersionId": o.review_survey.version_id,
                         "contentHash": o.review_survey.content_hash, "answers": {"n": 7, "notes": marker[:200]}})
        assert r.status == 201, r.text
        rid = r.json["responseId"]
        # a step of history for the response
        rv = c.post(f"/v1/orgs/{o.org_id}/responses/{rid}/review", token=o.reviewer.token,
                    json={"action": "startReview", "expectedRevision": 1}, headers={"Idempotency-Key": new_id("k")})
        assert rv.status == 200, rv.text
        cuid = new_id(f"cuid{key}")
        u = c.request("PUT", f"/v1/orgs/{o.org_id}/uploads/{cuid}", token=owner.token, body=jpeg(3000),
                      headers={"Content-Type": "image/jpeg", "Survey-Version-Id": o.review_survey.version_id, "Question-Id": FILE_QUESTION})
        assert u.status == 201, u.text
        title = f"Task-{key}-{new_id('t')}"
        t = c.post(f"/v1/orgs/{o.org_id}/tasks", token=o.admin.token,
                   json={"title": title, "surveyId": o.review_survey.survey_id, "assigneeUserId": owner.user_id})
        assert t.status == 201, t.text
        return {"response": rid, "csid": csid, "upload": cuid, "task": t.json["taskId"], "tus": self.new_tus(o),
                "survey": o.review_survey.survey_id, "version": o.review_survey.version_id, "marker": marker, "task_title": title,
                "victim": self.new_victim(o)}

    def new_tus(self, o: Org) -> str:
        b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
        meta = ",".join([f"clientUploadId {b64(new_id('tus'))}", f"surveyVersionId {b64(o.review_survey.version_id)}",
                         f"questionId {b64(FILE_QUESTION)}", f"contentType {b64('image/jpeg')}"])
        r = self.server.client().post(f"/v1/orgs/{o.org_id}/uploads/resumable", token=o.collectors[0].token,
                                      headers={"Tus-Resumable": "1.0.0", "Upload-Length": "5000", "Upload-Metadata": meta})
        assert r.status == 201, r.text
        return r.header("location").rsplit("/", 1)[1]

    def new_victim(self, o: Org) -> dict:
        v = create_user(self.server, o.org_id, o.admin.token, "victim", ["collector"])
        # the token id of the victim's first token: create a second one whose id we know
        t = self.server.client().post(f"/v1/orgs/{o.org_id}/users/{v.user_id}/tokens", token=o.admin.token)
        assert t.status == 201, t.text
        return {"user": v.user_id, "token": t.json["tokenId"]}

    def replace(self, route: Route, org_key: str) -> None:
        o = self.orgs[org_key]
        if route.id_kind == "tus":
            self.things[org_key]["tus"] = self.new_tus(o)
        else:
            self.things[org_key]["victim"] = self.new_victim(o)

    # -- one cell ---------------------------------------------------------------------------

    def ids(self, route: Route, sel: str) -> tuple[str, str]:
        if route.id_kind is None:
            return "", ""
        if sel == "N":
            if route.id_kind == "usertoken":
                return NONE_IDS["user"], NONE_IDS["token"]
            return NONE_IDS[route.id_kind], ""
        t = self.things[sel]
        if route.id_kind == "usertoken":
            return t["victim"]["user"], t["victim"]["token"]
        if route.id_kind == "user":
            return t["victim"]["user"], ""
        return t[route.id_kind], ""

    def send(self, route: Route, caller: Caller, org_sel: str, id_sel: str) -> dict:
        org_id = self.orgs[org_sel].org_id if org_sel in ("A", "B") else NONE_ORG
        id1, id2 = self.ids(route, id_sel)
        path = route.path.replace("{org}", org_id).replace("{id}", id1).replace("{id2}", id2)
        version = self.orgs[org_sel].review_survey.version_id if org_sel in ("A", "B") else NONE_IDS["version"]
        headers = {k: v.replace("{version}", version) for k, v in route.headers.items()}
        data = build_request(route.method, path, 0, caller.token, body=route.body, headers=headers)
        self.requests += 1
        try:
            r = self.server.client(10).send_raw(data, head_only=route.method == "HEAD")
        except HTTPFailure as e:
            return {"status": None, "code": None, "body": "", "raw": b"", "err": str(e), "request": data}
        text = r.body.decode("utf-8", "replace")
        norm = text
        for s in (id2, id1, org_id):
            if s:
                norm = norm.replace(s, "<X>")
        return {"status": r.status, "code": r.error_code, "body": norm, "raw": r.body, "ctype": r.header("content-type") or "",
                "request": data}

    # -- the matrix -------------------------------------------------------------------------

    def run_pass(self, label: str) -> None:
        for route in ROUTES:
            orgs = ["A", "B", "N"] if route.has_org else ["-"]
            idsels = ["A", "B", "N"] if route.id_kind else ["-"]
            for caller in self.callers:
                for org_sel in orgs:
                    for id_sel in idsels:
                        res = self.send(route, caller, org_sel if org_sel != "-" else "N", id_sel)
                        self.results[(label, route.name, caller.name, org_sel, id_sel)] = res
                        st = res["status"]
                        if route.consumes and st is not None and 200 <= st < 300 and id_sel in ("A", "B"):
                            self.replace(route, id_sel)

    # -- judging ----------------------------------------------------------------------------

    def judge(self, checks: Checks) -> None:
        bad: dict[str, list[str]] = {k: [] for k in ("5xx", "problem", "outsider", "foreign_id", "own", "anon", "passes",
                                                      "operator", "public", "secrets")}
        passes = sorted({k[0] for k in self.results})
        for (label, rname, cname, org_sel, id_sel), res in self.results.items():
            route = next(r for r in ROUTES if r.name == rname)
            caller = next(c for c in self.callers if c.name == cname)
            st, code = res["status"], res["code"]
            where = f"[{label}] {rname} by {cname} org={org_sel} id={id_sel}"
            if st is None:
                bad["5xx"].append(f"{where}: no answer ({res['err']})")
                continue
            if st >= 500:
                bad["5xx"].append(f"{where}: {st} {res['body'][:120]}")
            if st >= 400 and route.method != "HEAD" and ("problem+json" not in res.get("ctype", "") or not isinstance(code, int)):
                bad["problem"].append(f"{where}: {st} not problem+json ({res.get('ctype')}) {res['body'][:80]}")
            ref = lambda o, i: self.results.get((label, rname, cname, o, i))  # noqa: E731
            same = lambda x, y: x is not None and y is not None and x["status"] == y["status"] and (  # noqa: E731
                route.method == "HEAD" or (x["code"] == y["code"] and x["body"] == y["body"]))
            expired = label == "expired"

            if route.all404:
                if st != 404 or code != 1005:
                    bad["public"].append(f"{where}: {st} {code} (expected 404/1005)")
                continue
            if route.public:
                if st not in (200, 204):
                    bad["public"].append(f"{where}: {st}")
                continue
            if caller.kind == "anonymous":
                first = ref(*(("N", "N") if route.has_org and route.id_kind else ("N", "-") if route.has_org else ("-", "-")))
                if st != 401 or (route.method != "HEAD" and code != 1007) or not same(res, first):
                    bad["anon"].append(f"{where}: {st} {code}")
                continue
            if caller.kind == "operator":
                kind = route.table.get("operator", F)
                if not route.has_org:
                    self.expect_class(bad["operator"], where, res, kind, route, expired, None)
                    continue
                if kind == A:
                    if org_sel == "N" or (route.id_kind and id_sel != org_sel):
                        if st not in (400, 404, 422) or (st == 404 and code != 1005):
                            bad["operator"].append(f"{where}: {st} {code} (expected 404)")
                    else:
                        self.expect_class(bad["operator"], where, res, A, route, expired, None)
                else:
                    base = ref("N", "N" if route.id_kind else "-")
                    if st not in (403, 404) or not same(res, base):
                        bad["operator"].append(f"{where}: {st} {code}, expected the same 403/404 everywhere")
                continue
            # a user of organization caller.home
            if not route.has_org:
                self.expect_class(bad["own"], where, res, route.table.get(caller.kind, F), route, expired, None)
                self.scan_secrets(bad["secrets"], where, res, caller)
                continue
            org_rel = "home" if org_sel == caller.home else ("none" if org_sel == "N" else "other")
            none_ref = ref("N", "N" if route.id_kind else "-")
            if org_rel != "home":
                if st != 404 or (route.method != "HEAD" and code != 1005) or not same(res, none_ref):
                    bad["outsider"].append(f"{where}: {st} {code} {res['body'][:100]} — expected the 404 of a nonexistent org")
            elif route.id_kind and id_sel != org_sel:
                home_none = ref(org_sel, "N")
                if not same(res, home_none) or 200 <= st < 300:
                    bad["foreign_id"].append(f"{where}: {st} {code} {res['body'][:90]} vs nonexistent id: "
                                             f"{home_none['status'] if home_none else None} {home_none['body'][:90] if home_none else ''}")
            else:
                kind = route.table.get(caller.kind, F)
                hidden_ref = ref(org_sel, "N") if route.id_kind else None
                self.expect_class(bad["own"], where, res, kind, route, expired, hidden_ref)
            self.scan_secrets(bad["secrets"], where, res, caller)

        # the same answers with the subscription active and expired, wherever the caller may not know
        if len(passes) == 2:
            for (label, rname, cname, org_sel, id_sel), res in self.results.items():
                if label != passes[0]:
                    continue
                route = next(r for r in ROUTES if r.name == rname)
                caller = next(c for c in self.callers if c.name == cname)
                other = self.results.get((passes[1], rname, cname, org_sel, id_sel))
                hidden = (caller.kind == "anonymous" or (caller.home and org_sel != caller.home and route.has_org)
                          or (caller.home and route.id_kind and id_sel != org_sel))
                if hidden and other and (other["status"] != res["status"] or other["body"] != res["body"]):
                    bad["passes"].append(f"{rname} by {cname} org={org_sel} id={id_sel}: active {res['status']} / expired {other['status']}")

        n = len(self.results)
        checks.check("tenancy: never a 5xx, never a dropped connection", not bad["5xx"], f"{n} answers; " + "; ".join(bad["5xx"][:3]))
        checks.check("tenancy: every error is problem+json with an errorCode", not bad["problem"], "; ".join(bad["problem"][:3]))
        checks.check("tenancy: another organization (or none) → exactly the 404 of a nonexistent organization",
                     not bad["outsider"], "; ".join(bad["outsider"][:3]))
        checks.check("tenancy: another organization's id → exactly the answer of a nonexistent id", not bad["foreign_id"],
                     "; ".join(bad["foreign_id"][:3]))
        checks.check("tenancy: own things → the role's answer (allowed / 403 / the 404 of nothing)", not bad["own"],
                     "; ".join(bad["own"][:4]))
        checks.check("tenancy: no token or a bad token → the same 401/1007 everywhere", not bad["anon"], "; ".join(bad["anon"][:3]))
        checks.check("tenancy: operator answers (its routes allowed, others the same 403/404 everywhere)", not bad["operator"],
                     "; ".join(bad["operator"][:3]))
        checks.check("tenancy: public routes answer everyone; unknown routes are 404/1005 for everyone", not bad["public"], "; ".join(bad["public"][:3]))
        checks.check("tenancy: hidden answers are identical with the subscription active and expired", not bad["passes"],
                     "; ".join(bad["passes"][:3]))
        checks.check("tenancy: no body carries another organization's (or another collector's) ids or data", not bad["secrets"],
                     "; ".join(bad["secrets"][:3]))
        self.bad = bad

    def expect_class(self, out: list, where: str, res: dict, kind: str, route: Route, expired: bool,
                     hidden_ref: Optional[dict]) -> None:
        st, code = res["status"], res["code"]
        reading = route.method in ("GET", "HEAD", "OPTIONS")
        if kind == A:
            if reading:
                ok = st == 200
            else:
                ok = (200 <= st < 300) or (400 <= st < 500 and st not in (401, 403, 404, 405) and (st != 402 or expired))
            if not ok:
                out.append(f"{where}: {st} {code} {res['body'][:100]} (allowed)")
        elif kind == F:
            if st != 403 or (route.method != "HEAD" and code != 1006):
                out.append(f"{where}: {st} {code} {res['body'][:100]} (expected 403/1006)")
        elif kind in (H, FH):
            if kind == FH and st == 403 and (route.method == "HEAD" or code == 1006):
                return
            ok = st == 404 and (route.method == "HEAD" or code == 1005)
            if ok and hidden_ref is not None and route.method != "HEAD":
                ok = hidden_ref["status"] == 404 and hidden_ref["body"] == res["body"]
            if not ok:
                out.append(f"{where}: {st} {code} {res['body'][:100]} (expected the 404 of a nonexistent id)")

    def scan_secrets(self, out: list, where: str, res: dict, caller: Caller) -> None:
        if not res["raw"] or caller.home is None:
            return
        text = res["raw"].decode("utf-8", "replace")
        req = res["request"].decode("latin-1")
        foreign = self.secrets["B" if caller.home == "A" else "A"]
        for s in foreign:
            if s and s in text and s not in req:
                out.append(f"{where}: the answer carries {s[:40]!r} of the other organization")
        if caller.kind == "collector2":
            for s in self.owner_secrets[caller.home]:
                if s and s in text and s not in req:
                    out.append(f"{where}: the answer carries {s[:40]!r} of another collector")

    # -- client ids and keys are scoped: a reuse elsewhere is never a replay of someone else's answer

    def key_scoping(self, checks: Checks) -> None:
        c = self.server.client()
        A_, B_ = self.orgs["A"], self.orgs["B"]
        tA, tB = self.things["A"], self.things["B"]
        # 1. the same clientSubmissionId in another organization is a new, separate submission
        r = c.post(f"/v1/orgs/{B_.org_id}/responses", token=B_.collectors[0].token,
                   json={"clientSubmissionId": tA["csid"], "surveyVersionId": B_.review_survey.version_id,
                         "contentHash": B_.review_survey.content_hash, "answers": {"n": 1}})
        checks.check("keys: org A's clientSubmissionId used in org B is a new submission there (201, its own responseId)",
                     r.status == 201 and r.json.get("responseId") not in (tA["response"],) and tA["response"] not in r.text,
                     f"{r.status} {r.text[:120]}")
        # 2. the same id by another collector of the same org: 1004, revealing nothing
        same = {"clientSubmissionId": tA["csid"], "surveyVersionId": A_.review_survey.version_id,
                "contentHash": A_.review_survey.content_hash, "answers": {"n": 7, "notes": tA["marker"][:200]}}
        r = c.post(f"/v1/orgs/{A_.org_id}/responses", token=A_.collectors[1].token, json=same)
        checks.check("keys: another collector's clientSubmissionId with the very same body is 1004 and reveals nothing",
                     r.status == 409 and r.error_code == 1004 and tA["response"] not in r.text and A_.collectors[0].user_id not in r.text,
                     f"{r.status} {r.text[:160]}")
        # 3. an Idempotency-Key already used by org A's admin, reused by org B's admin with the same body
        key = new_id("shared-key")
        body = {"title": "Same title", "reviewRequired": False}
        a1 = c.post(f"/v1/orgs/{A_.org_id}/surveys", token=A_.admin.token, json=body, headers={"Idempotency-Key": key})
        b1 = c.post(f"/v1/orgs/{B_.org_id}/surveys", token=B_.admin.token, json=body, headers={"Idempotency-Key": key})
        ok = (a1.status == 201 and b1.status == 201 and b1.header("idempotent-replayed") != "true"
              and b1.json.get("surveyId") != a1.json.get("surveyId"))
        checks.check("keys: an Idempotency-Key reused in another organization runs there (201), never replays the other's answer",
                     ok, f"A {a1.status} {a1.json and a1.json.get('surveyId')}, B {b1.status} {b1.header('idempotent-replayed')} "
                         f"{b1.json and b1.json.get('surveyId')}")
        a2 = c.post(f"/v1/orgs/{A_.org_id}/surveys", token=A_.admin.token, json=body, headers={"Idempotency-Key": key})
        checks.check("keys: ... while the same key by its own caller replays (200, same surveyId)",
                     a2.status == 200 and a2.json.get("surveyId") == a1.json.get("surveyId"), f"{a2.status}")
        # 4. the same Idempotency-Key by the other reviewer-capable caller of the same org on the same target
        rv = c.post(f"/v1/orgs/{A_.org_id}/users", token=A_.admin.token, json={"name": "second reviewer", "roles": ["reviewer"]})
        r2 = rv.json["token"]
        k2 = new_id("rk")
        first = c.post(f"/v1/orgs/{A_.org_id}/responses/{tA['response']}/review", token=A_.reviewer.token,
                       json={"action": "returnForCorrection", "expectedRevision": 2, "comment": "x"}, headers={"Idempotency-Key": k2})
        second = c.post(f"/v1/orgs/{A_.org_id}/responses/{tA['response']}/review", token=r2,
                        json={"action": "returnForCorrection", "expectedRevision": 2, "comment": "x"}, headers={"Idempotency-Key": k2})
        checks.check("keys: another reviewer's reuse of a key on the same response is judged on its own (1020/1021, not a replay)",
                     first.status == 200 and second.status == 409 and second.error_code in (1020, 1021)
                     and second.header("idempotent-replayed") != "true", f"first {first.status}, second {second.status} {second.error_code}")
        # 5. the same clientUploadId in another organization is a separate upload
        u = c.request("PUT", f"/v1/orgs/{B_.org_id}/uploads/{tA['upload']}", token=B_.collectors[0].token, body=jpeg(4000, seed=9),
                      headers={"Content-Type": "image/jpeg", "Survey-Version-Id": B_.review_survey.version_id, "Question-Id": FILE_QUESTION})
        checks.check("keys: org A's clientUploadId used in org B is a new upload there (201)", u.status == 201, f"{u.status} {u.text[:100]}")
        mine = c.get(f"/v1/orgs/{A_.org_id}/uploads/{tA['upload']}", token=A_.collectors[0].token)
        checks.check("keys: ... and org A's upload is unchanged", mine.status == 200 and mine.json["size"] == 3000, f"{mine.status}")

    # -- the judge judged: mutations of real answers must be caught

    def self_test(self, checks: Checks) -> None:
        import copy
        import io
        import contextlib
        real = self.results
        first = lambda pred: next(k for k, v in real.items() if pred(k, v))  # noqa: E731
        mutations = []
        k1 = first(lambda k, v: k[2] == "A admin" and k[3] == "B" and k[1] == "get response")
        mutations.append(("outsider", k1, lambda v: {**v, "body": v["body"] + " "}))
        k2 = first(lambda k, v: k[2] == "A other collector" and k[1] == "get response" and k[3] == "A" and k[4] == "A")
        mutations.append(("own", k2, lambda v: {**v, "status": 200, "code": None}))
        k3 = first(lambda k, v: k[2] == "A admin" and k[1] == "list surveys" and k[3] == "A")
        leak = self.things["B"]["response"]
        mutations.append(("secrets", k3, lambda v: {**v, "raw": v["raw"] + leak.encode()}))
        k4 = first(lambda k, v: k[2] == "A collector (owner)" and k[1] == "get task" and k[3] == "A" and k[4] == "B")
        mutations.append(("foreign_id", k4, lambda v: {**v, "status": 403, "code": 1006}))
        caught = 0
        for kind, key, mutate in mutations:
            self.results = copy.copy(real)
            self.results[key] = mutate(real[key])
            scratch = Checks("self-test")
            with contextlib.redirect_stdout(io.StringIO()):
                self.judge(scratch)
            caught += bool(self.bad[kind])
        self.results = real
        with contextlib.redirect_stdout(io.StringIO()):
            self.judge(Checks("again"))
        checks.check("tenancy self-test: a leaked id, a changed 404, a wrong role answer and a foreign-id difference are each caught",
                     caught == len(mutations), f"{caught} of {len(mutations)}")

    def set_all(self, active: bool) -> None:
        for o in self.orgs.values():
            exp = iso_in(86400 * 30) if active else iso_in(-3600)
            r = self.server.client().put(f"/v1/orgs/{o.org_id}/subscription", token=self.op, json={"expiresAt": exp})
            assert r.status == 200, r.text

    def run(self) -> int:
        checks = Checks("tenancy")
        t0 = time.monotonic()
        self.setup()
        log(f"tenancy: {len(ROUTES)} routes x {len(self.callers)} callers x (own, other, nonexistent org) x "
            f"(here, other org's, nonexistent id), active then expired")
        self.run_pass("active")
        self.set_all(False)
        self.run_pass("expired")
        self.set_all(True)
        self.judge(checks)
        statuses: dict = {}
        for v in self.results.values():
            statuses[v["status"]] = statuses.get(v["status"], 0) + 1
        print(f"tenancy answers by status: {dict(sorted(statuses.items(), key=lambda x: (x[0] is None, x[0] or 0)))}")
        self.self_test(checks)
        self.key_scoping(checks)
        checks.check("tenancy: the server is still up", self.server.running)
        print(f"tenancy figures: {len(ROUTES)} routes, {len(self.callers)} callers, {len(self.results)} cells, "
              f"{self.requests} requests, {time.monotonic() - t0:.1f}s")
        if self.a.verbose:
            for k, v in self.bad.items():
                for line in v[:40]:
                    print(f"  {k}: {line}")
        rc = self.server.terminate()
        checks.check("tenancy: graceful stop exits 0", rc == 0, f"exit {rc}")
        self.server.expect_check(checks, "tenancy: surveyd check exits 0")
        if checks.failed == 0 and not self.a.keep:
            self.server.remove()
        else:
            log(f"tenancy: data dir kept at {self.server.data_dir}")
        return checks.finish()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verbose", "-v", action="store_true", help="print every mismatch (up to 40 per kind)")
    p.add_argument("--keep", action="store_true")
    return Matrix(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
