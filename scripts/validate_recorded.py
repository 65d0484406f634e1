#!/usr/bin/env python3
"""Validates responses recorded by the end-to-end tests against Schemas/openapi.json.

    SURVEYD_RECORD_RESPONSES=/tmp/responses.jsonl swift test ...
    .build/venv/bin/python scripts/validate_recorded.py /tmp/responses.jsonl [--coverage]

Each line of the file is one answer seen by a test:
    {"method": "POST", "path": "/v1/orgs/o/responses?x=y", "status": 201,
     "contentType": "application/json", "body": "<the body as a string>"}

For each line: the path is matched to its OpenAPI path template (literal segments win over
parameters), the method to its operation, the status to a documented response of that operation;
the Content-Type must be one the response declares; a JSON body (application/json,
application/problem+json, */*+json) is validated against the declared schema with JSON Schema
Draft 2020-12, resolving the relative $refs to Schemas/*.schema.json. Failing: an undocumented
status, an unknown operation, a content type not declared, a body breaking its schema.

Two answers need no operation: an unknown route answers 404 / 1005, and a known path with an
undeclared method answers 405 with `Allow`; both must be a valid Problem body.

Prints every failure and "N passed, M failed"; exits 1 when M > 0 (and, with --require, when
the file holds no lines). --coverage also lists operations and statuses never seen.
Needs the `jsonschema` package (scripts/conformance.sh installs it into .build/venv).
"""
import argparse
import json
import os
import re
import sys
from urllib.parse import urlsplit

try:
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
except ImportError:  # pragma: no cover
    sys.exit("validate_recorded.py needs jsonschema: python3 -m pip install 'jsonschema>=4.18' "
             "(or run it with .build/venv/bin/python after scripts/conformance.sh)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "Schemas")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")



# ODK Central's top-level paths (Sources/SurveyServer/Central/CentralRefusal.swift).
CENTRAL_PREFIXES = ("/v1/projects", "/v1/users", "/v1/sessions", "/v1/roles", "/v1/assignments", "/v1/config", "/v1/audits", "/v1/backup")

def format_checker():
    checker = jsonschema.FormatChecker()

    @checker.checks("date-time")
    def _date_time(value):  # RFC 3339 (jsonschema checks it only with an extra package)
        return not isinstance(value, str) or bool(DATE_TIME.match(value))

    return checker


def load_registry():
    """Every Schemas/*.json as a resource under its file URI, so relative $refs resolve."""
    resources = []
    for name in sorted(os.listdir(SCHEMAS)):
        if name.endswith(".json"):
            with open(os.path.join(SCHEMAS, name)) as f:
                contents = json.load(f)
            uri = "file://" + os.path.join(SCHEMAS, name)
            resources.append((uri, Resource.from_contents(contents, default_specification=DRAFT202012)))
    return Registry().with_resources(resources)


class Spec:
    def __init__(self):
        with open(os.path.join(SCHEMAS, "openapi.json")) as f:
            self.doc = json.load(f)
        self.base = "file://" + os.path.join(SCHEMAS, "openapi.json")
        self.registry = load_registry()
        self.checker = format_checker()
        self.templates = []
        for template in self.doc["paths"]:
            parts = template.strip("/").split("/")
            # A parameter may carry a literal suffix (`{surveyId}.svc`): it counts half a literal,
            # so `/surveys/{surveyId}.svc` wins over `/surveys/{surveyId}`.
            literal = sum(1 if not p.startswith("{") else 0.5 if not p.endswith("}") else 0 for p in parts)
            def piece(p):
                if not p.startswith("{"):
                    return re.escape(p)
                suffix = p[p.index("}") + 1:]
                return "[^/]+" + re.escape(suffix)
            regex = "^/" + "/".join(piece(p) for p in parts) + "$"
            self.templates.append((re.compile(regex), literal, template))
        # Most literal segments first: /uploads/resumable wins over /uploads/{clientUploadId}.
        self.templates.sort(key=lambda t: -t[1])

    def match(self, path):
        for regex, _, template in self.templates:
            if regex.match(path):
                return template
        return None

    def deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj and obj["$ref"].startswith("#/"):
            node = self.doc
            for part in obj["$ref"][2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            obj = node
        return obj

    def validate(self, schema, instance):
        """Errors of `instance` against `schema` (a fragment of openapi.json, refs resolved from it)."""
        # The wrapper sits beside openapi.json, so relative refs ("receipt.schema.json") resolve to
        # Schemas/; its local refs ("#/components/...") mean openapi.json: rewrite them to it.
        wrapper = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                   "$id": "file://" + os.path.join(SCHEMAS, "__validate__.json")}
        wrapper.update(rewrite_local_refs(schema, self.base))
        validator = jsonschema.Draft202012Validator(wrapper, registry=self.registry, format_checker=self.checker)
        return sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))

    def problem_schema(self):
        return {"$ref": "#/components/schemas/Problem"}


def rewrite_local_refs(node, base):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/"):
                out[k] = base + v
            else:
                out[k] = rewrite_local_refs(v, base)
        return out
    if isinstance(node, list):
        return [rewrite_local_refs(v, base) for v in node]
    return node


def media_matches(declared, actual):
    if declared == actual or declared == "*/*":
        return True
    if declared.endswith("/*"):
        return actual.split("/")[0] == declared[:-2]
    return False


def is_json(media):
    return media in ("application/json", "application/problem+json") or media.endswith("+json")


def check(spec, rec):
    """Returns (operation key or None, status, list of failure messages)."""
    method = str(rec.get("method", "")).lower()
    path = urlsplit(str(rec.get("path", ""))).path
    status = rec.get("status")
    ctype = (rec.get("contentType") or "").split(";")[0].strip().lower()
    body = rec.get("body")
    if body is None:
        body = ""
    if path == "/console" or path.startswith("/console/"):
        # The web console is the HTML door: its pages are not operations of the JSON API's
        # document (the browser tests and ConsoleTests check them).
        return None, status, []
    if path.startswith("/v1/key/"):
        # The OpenRosa door answers OpenRosa's XML documents (Docs/odk-collect.md; OpenRosaTests
        # checks them): not operations of the JSON API's document either.
        return None, status, []
    template = spec.match(path)

    def json_body():
        try:
            return json.loads(body), None
        except ValueError as e:
            return None, f"body is not JSON ({e}): {body[:200]!r}"

    def problem_only(why):
        failures = []
        if ctype != "application/problem+json":
            failures.append(f"{why}: Content-Type {ctype!r}, expected application/problem+json")
        value, err = json_body()
        if err:
            failures.append(err)
        else:
            failures += [describe(e) for e in spec.validate(spec.problem_schema(), value)]
        return failures

    if template is None:
        if status == 404:
            return None, status, problem_only("unknown route")
        # ODK Central's API: a route of Central's that surveyd does not offer is 501 / 1050
        # (Docs/central-api.md), a problem document like any other refusal.
        if status == 501 and path.startswith(CENTRAL_PREFIXES):
            return None, status, problem_only("a Central route not offered")
        return None, status, [f"no operation matches {path} (status {status})"]
    item = spec.doc["paths"][template]
    op = item.get(method)
    key = f"{method.upper()} {template}"
    if op is None:
        if method == "head" and "get" in item:  # HEAD of a GET route: the GET's headers, no body
            op = item["get"]
        elif status == 405:
            return key, status, problem_only("405 for an undeclared method")
        else:
            return key, status, [f"{method.upper()} is not an operation of {template} (status {status}, expected 405)"]
    responses = op.get("responses", {})
    response = responses.get(str(status))
    if response is None:
        documented = ", ".join(sorted(responses))
        return key, status, [f"status {status} is not documented for {key} (documented: {documented})"]
    response = spec.deref(response)
    content = response.get("content") or {}
    if not content or method == "head":
        if body and method != "head":
            return key, status, [f"{key} {status} declares no body but one was sent: {body[:200]!r}"]
        return key, status, []
    declared = [m for m in content if media_matches(m, ctype)]
    if not declared:
        if not body and ctype == "":
            return key, status, [f"{key} {status}: empty answer without Content-Type; declared {', '.join(content)}"]
        return key, status, [f"{key} {status}: Content-Type {ctype!r} not among {', '.join(content)}"]
    media = declared[0]
    schema = content[media].get("schema")
    if schema is None or not is_json(ctype):
        return key, status, []
    value, err = json_body()
    if err:
        return key, status, [err]
    return key, status, [describe(e) for e in spec.validate(schema, value)]


def describe(error):
    """The reason, in words: a oneOf/anyOf failure names the errors of its closest branch (the one
    with the fewest errors), so a receipt missing a field says which, not "not valid under any"."""
    prefix = ""
    while error.context:
        branches = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        closest = min(branches.values(), key=len)
        prefix += f"no {error.validator} branch fits; closest: "
        error = closest[0] if len(closest) == 1 else min(closest, key=lambda e: len(e.context))
        if len(closest) > 1:
            prefix += f"({len(closest)} errors, first) "
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {prefix}{error.message[:300]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="JSON-lines file written by the end-to-end tests")
    ap.add_argument("--coverage", action="store_true", help="also list documented operations/statuses never seen")
    ap.add_argument("--require", action="store_true", help="fail when the file holds no records")
    ap.add_argument("--max-shown", type=int, default=50, help="failures printed in full (default 50)")
    args = ap.parse_args()

    spec = Spec()
    passed = failed = 0
    seen = set()
    shown = 0
    with open(args.file, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                failed += 1
                print(f"line {number}: not JSON: {e}")
                continue
            key, status, failures = check(spec, rec)
            if key:
                seen.add((key, str(status)))
            if failures:
                failed += 1
                if shown < args.max_shown:
                    shown += 1
                    print(f"FAIL line {number}: {rec.get('method')} {rec.get('path')} -> {status} {rec.get('contentType')}")
                    for msg in failures:
                        print("    " + msg)
                    print("    body: " + str(rec.get("body"))[:300])
            else:
                passed += 1

    if args.coverage:
        missing_ops, missing_statuses = [], []
        for template, item in spec.doc["paths"].items():
            for method in METHODS:
                if method not in item:
                    continue
                key = f"{method.upper()} {template}"
                statuses = sorted(item[method].get("responses", {}))
                got = [s for s in statuses if (key, s) in seen]
                if not got:
                    missing_ops.append(key)
                else:
                    missing_statuses.append(f"{key}: {', '.join(s for s in statuses if s not in got)}")
        print(f"operations never seen ({len(missing_ops)}):")
        for k in missing_ops:
            print("    " + k)
        print("documented statuses never seen, per operation seen:")
        for k in missing_statuses:
            print("    " + k)

    print(f"{passed} passed, {failed} failed")
    if failed or (args.require and passed == 0):
        sys.exit(1)


if __name__ == "__main__":
    main()
