#!/usr/bin/env python3
"""The OData feed read by clients no one here wrote.

A fresh `surveyd serve --demo` (port and data dir of its own); a survey with a group, a repeat and
a nested repeat, and responses in it. Then:

1. a strict look at `$metadata`: every type, key, navigation property, entity set and binding
   resolves (no PyPI or Debian package ships OASIS's CSDL XSD to validate against);
2. python-odata 0.8.1 reflects `$metadata` and reads every table through HTTP Basic (any user
   name, an API token as password) with server-driven paging (`Prefer: odata.maxpagesize=4`),
   a `$filter` it writes itself and `$expand`; each table's rows equal the zip export's CSV
   (`responses.csv`, `responses-<repeat>.csv`) cell by cell, one query per table;
3. odata-query 0.10.0's parser accepts every `$filter` example in Docs/odata.md, and the server
   answers each as the docs say (200, or 501 for those listed as unsupported).

Run with the venv scripts/setup.sh makes: `.build/venv-odata/bin/python Tests/OData/test_odata.py`.
Exits 1 on any failure.
"""
import csv
import io
import json
import os
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET
import zipfile

import requests
from odata import ODataService
from odata_query.grammar import ODataLexer, ODataParser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Support"))
from demo_server import Server  # noqa: E402  (a path of this repository)
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL:", what)


DEFINITION = {"title": "Wells", "questions": [
    {"id": "size", "type": "integer", "label": "People"},
    {"id": "when", "type": "date", "label": "Visited"},
    {"id": "loc", "type": "geopoint", "label": "Where"},
    {"id": "note", "type": "text", "label": "Note"},
    {"id": "site", "type": "group", "label": "Site", "children": [
        {"id": "district", "type": "text", "label": "District"},
        {"id": "depth", "type": "decimal", "label": "Depth"},
    ]},
    {"id": "members", "type": "repeat", "label": "Member", "children": [
        {"id": "name", "type": "text", "label": "Name"},
        {"id": "age", "type": "integer", "label": "Age"},
        {"id": "visits", "type": "repeat", "label": "Visit", "children": [{"id": "day", "type": "date", "label": "Day"}]},
    ]},
]}


def answers(i):
    a = {"size": i, "note": f"note {i}" if i % 3 else "=1+1", "district": ["North", "South"][i % 2]}
    if i % 2:
        a["when"] = f"2026-0{1 + i % 9}-1{i % 10}"
        a["loc"] = {"lat": -1.0 - i / 100, "lon": 36.0 + i / 100, "accuracy": 4.5}
        a["depth"] = i + 0.25
    a["members"] = [{"name": f"m{i}-{k}", "age": 20 + k, "visits": [{"day": "2026-10-0" + str(1 + v)} for v in range(k)]}
                    for k in range(i % 4)]
    return a


def strict_metadata(xml):
    """Every name the document uses resolves to something it declares."""
    ns = {"edmx": "http://docs.oasis-open.org/odata/ns/edmx", "edm": "http://docs.oasis-open.org/odata/ns/edm"}
    doc = ET.fromstring(xml)
    check(doc.tag == "{%s}Edmx" % ns["edmx"] and doc.get("Version") == "4.0", "the root is edmx:Edmx Version 4.0")
    schemas = doc.findall("edmx:DataServices/edm:Schema", ns)
    check(len(schemas) == 1, "one schema")
    primitive = {"Edm.String", "Edm.Int64", "Edm.Decimal", "Edm.Date", "Edm.DateTimeOffset", "Edm.GeographyPoint"}
    complex_types, entity_types = {}, {}
    for s in schemas:
        n = s.get("Namespace")
        for c in s.findall("edm:ComplexType", ns):
            complex_types[n + "." + c.get("Name")] = c
        for e in s.findall("edm:EntityType", ns):
            entity_types[n + "." + e.get("Name")] = e
    for name, t in list(complex_types.items()) + list(entity_types.items()):
        props = {p.get("Name"): p for p in t.findall("edm:Property", ns)}
        check(len(props) == len(t.findall("edm:Property", ns)), f"{name}: property names are distinct")
        for p in props.values():
            check(p.get("Type") in primitive or p.get("Type") in complex_types, f"{name}.{p.get('Name')}: type {p.get('Type')} resolves")
        for nav in t.findall("edm:NavigationProperty", ns):
            m = re.fullmatch(r"Collection\((.+)\)", nav.get("Type"))
            check(m and m.group(1) in entity_types, f"{name}.{nav.get('Name')}: navigation type resolves")
        if name in entity_types:
            keys = [k.get("Name") for k in t.findall("edm:Key/edm:PropertyRef", ns)]
            check(keys == ["__id"] and props["__id"].get("Nullable") == "false", f"{name}: key __id")
    sets = {}
    for c in doc.findall("edmx:DataServices/edm:Schema/edm:EntityContainer", ns):
        for es in c.findall("edm:EntitySet", ns):
            sets[es.get("Name")] = es
    for name, es in sets.items():
        t = entity_types.get(es.get("EntityType"))
        check(t is not None, f"entity set {name}: its type resolves")
        navs = {n.get("Name") for n in t.findall("edm:NavigationProperty", ns)} if t is not None else set()
        for b in es.findall("edm:NavigationPropertyBinding", ns):
            check(b.get("Path") in navs and b.get("Target") in sets, f"entity set {name}: binding {b.get('Path')} resolves")
        if "." in name:  # a repeat's table names its parent row
            parent = name.rsplit(".", 1)[0]
            key = "__" + parent.rsplit(".", 1)[-1] + "-id"
            check(parent in sets and t is not None and any(p.get("Name") == key for p in t.findall("edm:Property", ns)),
                  f"entity set {name}: names its parent by {key}")
    return sets


def cell(value, type_):
    """An OData value as the CSV writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value).rstrip("0").rstrip(".") if isinstance(value, float) and "e" not in repr(value) else str(value)
    return str(value)


def uncsv(text):
    """The CSV's text without the leading ' that guards a formula."""
    return text[1:] if text[:1] == "'" and text[1:2] in ("=", "+", "-", "@", "\t", "\r") else text


def docs_filters():
    """Every `$filter` example of Docs/odata.md: (filter, expected status)."""
    out = []
    expected = 200
    for line in open(os.path.join(ROOT, "Docs", "odata.md")):
        if "<!-- filters: 200 -->" in line:
            expected = 200
        if "<!-- filters: 501 -->" in line:
            expected = 501
        for m in re.finditer(r"\$filter=([^`]+)`", line):
            out.append((m.group(1), expected))
    return out


def entity_list_feed(base, e):
    """An entity list's feed read by python-odata: strict metadata, every entity once through
    paging, the rows equal to the API's entities."""
    admin = {"Authorization": "Bearer " + e["ADMIN"]}
    s = requests.post(f"{base}/v1/orgs/{e['ORG']}/surveys", json={"title": "Well registration"}, headers=admin).json()
    definition = {"title": "Well registration", "questions": [{"id": "owner", "type": "text", "label": "Owner"}],
                  "entity": {"list": "wells", "create": True, "label": "${owner}", "saveTo": {"owner": "owner_name"}}}
    v = requests.post(f"{base}/v1/orgs/{e['ORG']}/surveys/{s['surveyId']}/versions", json={"definition": definition}, headers=admin)
    check(v.status_code == 201, f"a form that writes the list wells: {v.status_code} {v.text[:300]}")
    for i in range(9):
        r = requests.post(f"{base}/v1/orgs/{e['ORG']}/entity-lists/wells/entities", json={"label": f"Well {i}", "properties": {"owner_name": f"Owner {i}"}},
                          headers={**admin, "Idempotency-Key": f"py-odata-well-{i:04d}"})
        check(r.status_code == 201, f"entity {i}: {r.status_code} {r.text[:200]}")
    stored = requests.get(f"{base}/v1/orgs/{e['ORG']}/entity-lists/wells/entities", params={"limit": "100"}, headers=admin).json()["items"]
    root = f"{base}/v1/orgs/{e['ORG']}/entity-lists/wells.svc"
    auth = ("excel", e["REVIEWER"])
    meta = requests.get(root + "/$metadata", auth=auth)
    check(meta.status_code == 200 and sorted(strict_metadata(meta.content)) == ["Entities"], f"entity list $metadata: {meta.status_code}")
    service = ODataService(root + "/", auth=auth, reflect_entities=True, quiet_progress=True, extra_headers={"Prefer": "odata.maxpagesize=4"})
    check(sorted(service.entities) == ["Entities"], f"python-odata reflects {sorted(service.entities)}")
    rows = [x.__odata__.data for x in service.query(service.entities["Entities"])]
    check([r["__id"] for r in rows] == [x["id"] for x in stored], f"Entities: {len(rows)} rows through paging, the API has {len(stored)}")
    for row, want in zip(rows, stored):
        check(row["label"] == want["label"] and row["owner_name"] == want["properties"]["owner_name"]
              and row["__system"]["version"] == want["version"], f"Entities {row['__id']}: {row}")


def main():
    server = Server(prefix="surveyd-odata-")
    try:
        e, base = server.env, server.url
        admin = {"Authorization": "Bearer " + e["ADMIN"]}
        s = requests.post(f"{base}/v1/orgs/{e['ORG']}/surveys", json={"title": "Wells", "reviewRequired": False}, headers=admin).json()
        v = requests.post(f"{base}/v1/orgs/{e['ORG']}/surveys/{s['surveyId']}/versions", json={"definition": DEFINITION}, headers=admin).json()
        for i in range(23):
            r = requests.post(f"{base}/v1/orgs/{e['ORG']}/responses", headers={"Authorization": "Bearer " + e["COLLECTOR"]},
                              json={"clientSubmissionId": f"py-odata-{i:04d}", "surveyVersionId": v["surveyVersionId"],
                                    "contentHash": v["contentHash"], "answers": answers(i)})
            check(r.status_code == 201, f"submission {i}: {r.status_code} {r.text[:200]}")
        root = f"{base}/v1/orgs/{e['ORG']}/surveys/{s['surveyId']}.svc"
        auth = ("excel", e["REVIEWER"])

        meta = requests.get(root + "/$metadata", auth=auth)
        check(meta.status_code == 200, f"$metadata: {meta.status_code}")
        sets = strict_metadata(meta.content)
        check(sorted(sets) == ["Submissions", "Submissions.members", "Submissions.members.visits"], f"entity sets: {sorted(sets)}")

        # The zip export: the tables to compare with, cell by cell.
        z = requests.get(f"{base}/v1/orgs/{e['ORG']}/surveys/{s['surveyId']}/responses.zip", headers={"Authorization": "Bearer " + e["REVIEWER"]})
        archive = zipfile.ZipFile(io.BytesIO(z.content))
        manifest = json.loads(archive.read("manifest.json"))
        paths = {t["repeatId"]: t["path"] for t in manifest["tables"]}
        tables = {"Submissions": list(csv.DictReader(io.StringIO(archive.read("responses.csv").decode())))}
        tables["Submissions.members"] = list(csv.DictReader(io.StringIO(archive.read(paths["members"]).decode())))
        tables["Submissions.members.visits"] = list(csv.DictReader(io.StringIO(archive.read(paths["visits"]).decode())))

        service = ODataService(root + "/", auth=auth, reflect_entities=True, quiet_progress=True,
                               extra_headers={"Prefer": "odata.maxpagesize=4"})
        check(sorted(service.entities) == sorted(sets), f"python-odata reflects {sorted(service.entities)}")
        by_response = {r["clientSubmissionId"]: r for r in tables["Submissions"]}
        for name, entity in service.entities.items():
            rows = [x.__odata__.data for x in service.query(entity)]
            expected = tables[name]
            check(len(rows) == len(expected), f"{name}: {len(rows)} rows through paging, the export has {len(expected)}")
            for row, want in zip(rows, expected):
                if name == "Submissions":
                    check(row["__id"] == want["clientSubmissionId"], f"{name}: __id {row['__id']}")
                    system = row["__system"]
                    check(system["submissionDate"] == want["receivedAt"] and system["submitterId"] == want["submittedBy"]
                          and system["reviewState"] == want["reviewState"], f"{name} {row['__id']}: __system")
                    pairs = [("size", row["size"]), ("when", row["when"]), ("note", row["note"]),
                             ("district", (row["site"] or {}).get("district")), ("depth", (row["site"] or {}).get("depth")),
                             ("loc.lon", (row["loc"] or {}).get("coordinates", [None])[0]),
                             ("loc.lat", (row["loc"] or {}).get("coordinates", [None, None])[1]),
                             ("loc.accuracy", ((row["loc"] or {}).get("properties") or {}).get("accuracy"))]
                else:
                    parent = "__Submissions-id" if name == "Submissions.members" else "__members-id"
                    check(row["__id"] == want["KEY"], f"{name}: __id {row['__id']} is the KEY {want['KEY']}")
                    parent_key = by_response[row[parent]]["responseId"] if name == "Submissions.members" else row[parent]
                    check(parent_key == want["PARENT_KEY"], f"{name} {row['__id']}: {parent} names the PARENT_KEY")
                    pairs = [(q, row[q]) for q in (["name", "age"] if name == "Submissions.members" else ["day"])]
                for column, value in pairs:
                    check(cell(value, None) == uncsv(want[column]), f"{name} {row['__id']}: {column} {value!r} != {want[column]!r}")

        # A filter and an expansion python-odata writes itself.
        Submissions, Members = service.entities["Submissions"], service.entities["Submissions.members"]
        big = [x.__odata__.data["__id"] for x in service.query(Submissions).filter(getattr(Submissions, "size") >= 20)]
        check(big == ["py-odata-0020", "py-odata-0021", "py-odata-0022"], f"$filter size ge 20: {big}")
        expanded = service.query(Submissions).filter(getattr(Submissions, "size") == 7).expand(getattr(Submissions, "members")).first()
        # python-odata keeps an expansion in its navigation cache, as entities of the repeat's table.
        members = [m.__odata__.data for m in expanded.__odata__.nav_cache.get("members", {}).get("collection", [])]
        check(len(members) == 3 and members[2]["name"] == "m7-2" and members[2]["__id"].endswith("/members[3]"), f"$expand=members: {members}")
        older = [x.__odata__.data["age"] for x in service.query(Members).filter(getattr(Members, "age") > 21)]
        check(older and all(a > 21 for a in older), f"$filter on a repeat table: {older}")

        # Every $filter of the docs: odata-query parses it; the server answers as the docs say.
        lexer, parser = ODataLexer(), ODataParser()
        examples = docs_filters()
        check(len(examples) >= 10, f"Docs/odata.md shows {len(examples)} $filter examples")
        for text, status in examples:
            try:
                parser.parse(lexer.tokenize(text))
            except Exception as err:  # noqa: BLE001 - any refusal is a failure to report
                check(False, f"odata-query refuses the documented $filter {text!r}: {err}")
            r = requests.get(root + "/Submissions", params={"$filter": text, "$top": "1"}, auth=auth)
            check(r.status_code == status, f"$filter={text}: {r.status_code} (the docs say {status}) {r.text[:200]}")
        entity_list_feed(base, e)
    finally:
        server.stop()
    print(f"OData clients: {'FAILED' if FAILURES else 'ok'} ({len(FAILURES)} failures)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
