#!/usr/bin/env python3
"""ODK Central's API read and written by pyodk 1.3.0, a client no one here wrote.

A fresh `surveyd serve --demo` (port and data dir of its own). A collector with a console
password (invited by the API, the password set on the invitation page) is pyodk's user; pyodk's
config is a TOML file with `base_url` = the server, as a team moving from Central writes it.
Then, through pyodk alone:

1. `projects.list()`, `forms.list()` and `forms.get_xml()`: the organization as project 1, the demo
   survey as a form, its XForm;
2. `submissions.create(xml=…)`, `submissions.list()`, `submissions.get(…)`: the submission is
   stored once (read back through surveyd's own API), a resend is the same submission;
3. with the subscription expired (the operator's API), `submissions.create` raises PyODKError
   with 402 / 1001 in its text and nothing is stored; after renewal the same call stores it
   once;
4. `submissions.edit(…)` (an instance whose `deprecatedID` is the current instanceID) is a new
   version of the same submission, in state edited; a stale one raises 409.1021;
5. `submissions.review(…, review_state="approved")` reaches surveyd's `approved` through its
   review steps (refused with 402 while expired, nothing changed);
6. a wrong password raises (401, nothing stored), and a Central route surveyd does not offer
   (a form's `submissions.csv`) raises with 501 / 1050;
7. `submissions.get_table(…)`: the form's OData table is every stored submission, in Central's
   names (`reviewState`, `submitterId` the actorId, `formVersion`), whole without a page size;
   `filter` on the review state (`'approved'`, `null`), `top`, `skip`, `count`, `select`; the same
   submissions and answers as the survey's CSV export;
8. as an admin: `entity_lists.create`, `entity_lists.add_property`, `entities.create` (sent
   again: the same entity), `entities.create_many` (all in one transaction), `entities.list`,
   `entities.update` with `base_version` (sent again: no new version; a stale one 409.15, nothing
   changed), `entities.delete`; while expired `entities.create` raises 402 / 1001 and stores
   nothing, and the same call after renewal stores it once;
9. `entities.get_table(…)` (`creatorId` the actorId, `__system/updates`; `filter`, `select`,
   `top`, `skip`, `count`) and `entities.merge(…, delete_not_matched=True)`: what it stores, read
   back through surveyd's own API (one updated, one created, a new property, one deleted), and
   the same merge again changes nothing;
10. as an admin: `forms.create` with an XLSForm naming a CSV file and that file (a draft, the file
    uploaded to it, then published: the file is in the OpenRosa door's manifest) and with an XForm
    string; a form id in use raises 409.3 and makes nothing; `forms.update` with a new definition,
    and with a file only (`version_updater`, or pyodk's timestamp version): the XForm served has
    the version; a version published already raises 422; while expired `forms.create` raises
    402 / 1001 and makes nothing, after renewal the same call makes it once; a collector raises 403;
11. `projects.create_app_users(display_names, forms)`: collectors whose tokens open the OpenRosa
    door's form list; run again, it makes no one twice;
12. `submissions.create(xml=…, attachments=[…])` (the XML, then its file): refused whole while
    expired, then one response with the very bytes sent; `add_comment` and `list_comments`.

Run with the venv scripts/setup.sh makes: `.build/venv-central/bin/python Tests/Central/test_pyodk.py`.
Exits 1 on any failure.
"""
import csv
import hashlib
import io
import logging
import os
import re
import shutil
import sys
import uuid
from datetime import datetime, timedelta, timezone

import requests
from pyodk.client import Client
from pyodk.errors import PyODKError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Support"))
from demo_server import Server  # noqa: E402  (a path of this repository)
FAILURES = []
# A refusal the test expects is not logged as pyodk logs its errors.
QUIET = logging.getLogger("test_pyodk.expected")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
EMAIL = "cole@example.org"
PASSWORD = "a long enough password"


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL:", what)


def set_expiry(base, e, delta):
    at = (datetime.now(timezone.utc) + delta).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    r = requests.put(f"{base}/v1/orgs/{e['ORG']}/subscription", json={"expiresAt": at},
                     headers={"Authorization": "Bearer " + e["OP"], "Idempotency-Key": "py-central-" + uuid.uuid4().hex})
    check(r.status_code == 200, f"set the subscription's expiry: {r.status_code} {r.text[:200]}")


def console_collector(base, e, name="Cole Console", roles=("collector", "reviewer"), email=EMAIL):
    """A user (by default a collector and reviewer) with an email and a console password: what pyodk signs in as."""
    admin = {"Authorization": "Bearer " + e["ADMIN"]}
    u = requests.post(f"{base}/v1/orgs/{e['ORG']}/users", json={"name": name, "roles": list(roles)}, headers=admin)
    check(u.status_code == 201, f"create the collector: {u.status_code} {u.text[:200]}")
    user = u.json()
    check(isinstance(user.get("actorId"), int) and user["actorId"] >= 1, f"the new user has an integer actorId: {user}")
    inv = requests.post(f"{base}/v1/orgs/{e['ORG']}/users/{user['userId']}/invitations", json={"email": email}, headers=admin)
    check(inv.status_code == 201, f"invite: {inv.status_code} {inv.text[:200]}")
    path = inv.json()["invitationUrl"].split("/console/", 1)[1]
    s = requests.post(f"{base}/console/{path}", data={"password": PASSWORD}, headers={"Origin": base})
    check(s.status_code == 200, f"set the password: {s.status_code}")
    return user


def instance(form_id, version, instance_id, size, replaces=None):
    deprecated = f"<deprecatedID>{replaces}</deprecatedID>" if replaces else ""
    return (f'<data id="{form_id}" version="{version}"><household_size>{size}</household_size>'
            f"<water_source>piped</water_source><notes>from pyodk</notes><location/><photo/>"
            f"<meta>{deprecated}<instanceID>{instance_id}</instanceID></meta></data>")


def stored(base, e, instance_id):
    """The responses surveyd stores under this instanceID, read through its own API."""
    r = requests.get(f"{base}/v1/orgs/{e['ORG']}/responses", params={"limit": "200"}, headers={"Authorization": "Bearer " + e["ADMIN"]})
    return [x for x in r.json()["items"] if x["clientSubmissionId"] == instance_id]


def client(server, d, password=PASSWORD, email=EMAIL):
    config = os.path.join(d, f"pyodk-{uuid.uuid4().hex}.toml")
    with open(config, "w") as f:
        f.write(f'[central]\nbase_url = "{server.url}"\nusername = "{email}"\npassword = "{password}"\ndefault_project_id = 1\n')
    return Client(config_path=config, cache_path=os.path.join(d, f"cache-{uuid.uuid4().hex}.toml"))


def submission_files(c, server, base, e, form, user):
    """`submissions.create(…, attachments=[…])` in Central's order (the XML, then its file):
    refused whole while expired; after renewal one response with its photo; then a reviewer's
    `add_comment` and `list_comments`."""
    iid = "uuid:" + str(uuid.uuid4())
    path = os.path.join(server.dir, "pump.jpg")
    jpeg = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) + b"JFIF\x00" + bytes(range(256)) * 8 + bytes([0xFF, 0xD9])
    with open(path, "wb") as f:
        f.write(jpeg)
    xml = instance(form.xmlFormId, form.version, iid, 4).replace("<photo/>", "<photo>pump.jpg</photo>")
    set_expiry(base, e, timedelta(minutes=-1))
    try:
        c.submissions.create(xml=xml, form_id=form.xmlFormId, attachments=[path])
        check(False, "an expired subscription refuses a submission with files")
    except PyODKError as err:
        check(err.is_central_error("402.1001"), f"a submission with files while expired: {err}")
    waiting = requests.get(f"{base}/v1/projects/1/forms/{form.xmlFormId}/submissions/{iid}", headers={"Authorization": "Bearer " + e["ADMIN"]})
    check(stored(base, e, iid) == [] and waiting.status_code == 404, f"nothing is stored or waits while expired: {waiting.status_code}")
    set_expiry(base, e, timedelta(days=1))
    made = c.submissions.create(xml=xml, form_id=form.xmlFormId, attachments=[path])
    check([(a.name, a.exists) for a in (made.attachments or [])] == [("pump.jpg", True)], f"submissions.create with a file: {made.attachments}")
    now = stored(base, e, iid)
    check(len(now) == 1 and now[0]["submittedBy"] == user["userId"], f"one response is stored with its file: {now}")
    upload = (now[0]["answers"].get("photo") or {}).get("clientUploadId") if now else None
    content = requests.get(f"{base}/v1/orgs/{e['ORG']}/uploads/{upload}/content", headers={"Authorization": "Bearer " + e["ADMIN"]})
    check(content.status_code == 200 and content.content == jpeg, f"the photo is the file pyodk sent: {content.status_code}")

    c.submissions.add_comment(instance_id=iid, comment="Photo is blurry", form_id=form.xmlFormId)
    comments = c.submissions.list_comments(instance_id=iid, form_id=form.xmlFormId)
    check([(x.body, x.actorId) for x in comments] == [("Photo is blurry", user["actorId"])], f"add_comment / list_comments: {comments}")


def entities(server, base, e):
    """Entity lists and entities through pyodk, as an admin's script loads a round of visits."""
    admin_email = "ada@example.org"
    console_collector(base, e, name="Ada Admin", roles=("admin",), email=admin_email)
    a = client(server, server.dir, email=admin_email)

    def rows():
        r = requests.get(f"{base}/v1/orgs/{e['ORG']}/entity-lists/households/entities", params={"limit": "200"},
                         headers={"Authorization": "Bearer " + e["ADMIN"]})
        return r.json()["items"] if r.status_code == 200 else []

    made = a.entity_lists.create(entity_list_name="households")
    check(made.name == "households" and made.projectId == 1 and made.approvalRequired is False, f"entity_lists.create: {made}")
    check(a.entity_lists.add_property(name="village", entity_list_name="households") is True, "entity_lists.add_property")
    got = a.entity_lists.get(entity_list_name="households")
    check([p.name for p in got.properties or []] == ["village"], f"entity_lists.get: {got}")
    check([x.name for x in a.entity_lists.list()] == ["households"], "entity_lists.list")

    house = str(uuid.uuid4())
    one = a.entities.create(label="House 1", data={"village": "Hill"}, entity_list_name="households", uuid=house)
    check(one.uuid == house and one.currentVersion.version == 1 and one.currentVersion.data == {"village": "Hill"}, f"entities.create: {one}")
    again = a.entities.create(label="House 1", data={"village": "Hill"}, entity_list_name="households", uuid=house)
    check(again.uuid == house and len(rows()) == 1, "the same create again is the same entity, stored once")
    try:
        a.entities.create(label="Another house", data={"village": "Hill"}, entity_list_name="households", uuid=house)
        check(False, "another entity under a used uuid is refused")
    except PyODKError as err:
        check(err.is_central_error("409.3"), f"409.3: {err}")
    check(a.entities.create_many(data=[{"label": "House 2", "village": "Dale"}, {"label": "House 3", "village": "Vale"}],
                                 entity_list_name="households") is True, "entities.create_many")
    check(sorted(x.currentVersion.label for x in a.entities.list(entity_list_name="households")) == ["House 1", "House 2", "House 3"],
          "entities.list: the three")
    try:
        a.entities.create_many(data=[{"label": "House 4", "village": "Dale"}, {"label": "House 5", "district": "North"}],
                               entity_list_name="households")
        check(False, "a batch with an unknown property is refused")
    except PyODKError as err:
        check("422" in str(err) and "1002" in str(err), f"a batch is all or none: {err}")
    check(len(rows()) == 3, "a refused batch stores none of its entities")

    updated = a.entities.update(uuid=house, data={"village": "Dale"}, base_version=1, entity_list_name="households")
    check(updated.currentVersion.version == 2 and updated.currentVersion.data == {"village": "Dale"}, f"entities.update: {updated}")
    same = a.entities.update(uuid=house, data={"village": "Dale"}, base_version=1, entity_list_name="households")
    check(same.currentVersion.version == 2, f"the same update again makes no new version: {same}")
    try:
        a.entities.update(uuid=house, data={"village": "Vale"}, base_version=1, entity_list_name="households")
        check(False, "a change from a stale version is refused")
    except PyODKError as err:
        check(err.is_central_error("409.15"), f"409.15: {err}")
    check([(x["version"], x["properties"]) for x in rows() if x["id"] == house] == [(2, {"village": "Dale"})], "the stale change changed nothing")

    set_expiry(base, e, timedelta(minutes=-1))
    later = str(uuid.uuid4())
    try:
        a.entities.create(label="House 6", data={"village": "Hill"}, entity_list_name="households", uuid=later)
        check(False, "an expired subscription refuses the entity")
    except PyODKError as err:
        check(err.is_central_error("402.1001"), f"entities.create while expired: {err}")
    check(len(rows()) == 3 and len(a.entities.list(entity_list_name="households")) == 3, "nothing stored while expired; reads still answer")
    set_expiry(base, e, timedelta(days=1))
    a.entities.create(label="House 6", data={"village": "Hill"}, entity_list_name="households", uuid=later)
    check(len([x for x in rows() if x["id"] == later]) == 1, "after renewal the same call stores it once")

    check(a.entities.delete(uuid=later, entity_list_name="households") is True, "entities.delete")
    check(later not in [x.uuid for x in a.entities.list(entity_list_name="households")], "a deleted entity leaves the list")

    entity_table(a, base, e, rows)


def submission_table(c, base, e, form, user):
    """`submissions.get_table`: the form's OData table, the submissions surveyd stores, in Central's names."""
    own = requests.get(f"{base}/v1/orgs/{e['ORG']}/responses", params={"limit": "200"},
                       headers={"Authorization": "Bearer " + e["ADMIN"]}).json()["items"]
    table = c.submissions.get_table(form_id=form.xmlFormId)
    rows = table["value"]
    check([r["__id"] for r in rows] == [x["clientSubmissionId"] for x in own], f"get_table: every stored submission once, in order: {rows}")
    central_state = {"submitted": None, "approved": "approved", "edited": "edited"}
    for r in rows:
        mine = next((x for x in own if x["clientSubmissionId"] == r["__id"]), None)
        check(mine is not None and r["household_size"] == mine["answers"]["household_size"]
              and r["water_source"] == mine["answers"]["water_source"], f"get_table's answers are the stored ones: {r}")
        check(mine is not None and r["__system"]["reviewState"] == central_state.get(mine["reviewState"], "?"),
              f"reviewState in Central's names: {r['__system']}")
        check(r["__system"]["submitterId"] == str(user["actorId"]) and r["__system"]["formVersion"] == form.version,
              f"submitterId is the actorId, formVersion the form's version: {r['__system']}")
    check("@odata.nextLink" not in table and "@odata.count" not in table, f"a table without a page size comes whole: {list(table)}")
    approved = c.submissions.get_table(form_id=form.xmlFormId, filter="__system/reviewState eq 'approved'")["value"]
    check([r["__id"] for r in approved] == [x["clientSubmissionId"] for x in own if x["reviewState"] == "approved"] and approved,
          f"get_table(filter=reviewState eq 'approved'): {approved}")
    undecided = c.submissions.get_table(form_id=form.xmlFormId, filter="__system/reviewState eq null")["value"]
    check([r["__id"] for r in undecided] == [x["clientSubmissionId"] for x in own if central_state.get(x["reviewState"]) is None],
          f"get_table(filter=reviewState eq null): {undecided}")
    first = c.submissions.get_table(form_id=form.xmlFormId, top=1, count=True)
    check([r["__id"] for r in first["value"]] == [rows[0]["__id"]] and first["@odata.count"] == len(rows),
          f"get_table(top=1, count=True): {first}")
    rest = c.submissions.get_table(form_id=form.xmlFormId, skip=1)["value"]
    check([r["__id"] for r in rest] == [r["__id"] for r in rows[1:]], f"get_table(skip=1): {rest}")
    # The same table as the CSV export of the survey: the same submissions, the same answers.
    survey = own[0]["surveyId"] if own else ""
    export = requests.get(f"{base}/v1/orgs/{e['ORG']}/surveys/{survey}/responses.csv", headers={"Authorization": "Bearer " + e["ADMIN"]})
    exported = {r["clientSubmissionId"]: r for r in csv.DictReader(io.StringIO(export.content.decode("utf-8-sig")))}
    check(export.status_code == 200 and sorted(exported) == sorted(r["__id"] for r in rows), f"the CSV export has the table's submissions: {sorted(exported)}")
    for r in rows:
        x = exported.get(r["__id"], {})
        check(x.get("household_size") == str(r["household_size"]) and x.get("water_source") == r["water_source"],
              f"the CSV export's answers are the table's: {x} / {r}")
    picked = c.submissions.get_table(form_id=form.xmlFormId, select="household_size", wkt=True)["value"]
    check(picked == [{"__id": r["__id"], "household_size": r["household_size"]} for r in rows], f"get_table(select=…): {picked}")


def entity_table(a, base, e, rows):
    """`entities.get_table` and `entities.merge` (get_table, then create_many, update and delete)."""
    admin_actor = a.session.get("users/current").json()["id"]
    table = a.entities.get_table(entity_list_name="households")
    listed = sorted((r["label"], r["village"], r["__system"]["version"], r["__system"]["updates"]) for r in table["value"])
    check(listed == [("House 1", "Dale", 2, 1), ("House 2", "Dale", 1, 0), ("House 3", "Vale", 1, 0)], f"entities.get_table: {table}")
    check(all(r["__system"]["creatorId"] == str(admin_actor) for r in table["value"]), f"creatorId is the actorId: {table['value']}")
    check(sorted(r["__id"] for r in table["value"]) == sorted(x["id"] for x in rows()), "get_table's ids are the stored entities'")
    changed = a.entities.get_table(entity_list_name="households", filter="__system/updates gt 0", select="label")["value"]
    check([(r["label"], sorted(r)) for r in changed] == [("House 1", ["__id", "label"])], f"get_table(filter, select): {changed}")
    page = a.entities.get_table(entity_list_name="households", top=1, skip=1, count=True)
    check(len(page["value"]) == 1 and page["value"][0]["__id"] == sorted(x["id"] for x in rows())[1] and page["@odata.count"] == 3,
          f"get_table(top, skip, count): {page}")

    # A round of visits loaded from a spreadsheet: one changed, one new, one new column, one gone.
    source = [{"label": "House 1", "village": "Hill", "size": "4"}, {"label": "House 2", "village": "Dale"},
              {"label": "House 7", "village": "Vale"}]
    actions = a.entities.merge(data=source, entity_list_name="households", delete_not_matched=True)
    check(sorted(k[0] for k in actions.to_insert) == ["House 7"] and sorted(k[0] for k in actions.to_update) == ["House 1"]
          and sorted(k[0] for k in actions.to_delete) == ["House 3"], f"merge's actions: {actions}")
    stored = {x["label"]: (x["properties"], x["version"]) for x in rows()}
    check(stored == {"House 1": ({"village": "Hill", "size": "4"}, 3), "House 2": ({"village": "Dale"}, 1), "House 7": ({"village": "Vale"}, 1)},
          f"merge stored the source (read through surveyd's API): {stored}")
    check(sorted(p.name for p in a.entity_lists.get(entity_list_name="households").properties or []) == ["size", "village"],
          "merge added the new column as a property")
    again = a.entities.merge(data=source, entity_list_name="households", delete_not_matched=True)
    check(not again.to_insert and not again.to_update and not again.to_delete, f"the same merge again changes nothing: {again}")
    check({x["label"]: (x["properties"], x["version"]) for x in rows()} == stored, "nothing changed the second time")


def trees_xform(version, title="Tree count"):
    """An XForm as a script holds one in memory: pyodk sends a string with the XForms namespace as XML."""
    return f"""<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head>
    <h:title>{title}</h:title>
    <model>
      <instance><data id="py_trees" version="{version}"><height/><meta><instanceID/></meta></data></instance>
      <bind nodeset="/data/height" type="int"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
    </model>
  </h:head>
  <h:body><input ref="/data/height"><label>Height</label></input></h:body>
</h:html>
"""


def forms(server, base, e):
    """Forms made and updated through pyodk, as an admin's script publishes a round's forms."""
    a = client(server, server.dir, email="ada@example.org")
    files = os.path.join(server.dir, "attachments")
    os.makedirs(os.path.join(files, "later"), exist_ok=True)
    sites = os.path.join(files, "sites.csv")
    with open(sites, "w") as f:
        f.write("name,label\nridge,North ridge\nford,South ford\n")
    later = os.path.join(files, "later", "sites.csv")
    with open(later, "w") as f:
        f.write("name,label\nridge,North ridge\nford,South ford\nmarsh,East marsh\n")

    def manifest(form_id):
        """The files ODK Collect downloads with the form: name → bytes, through the OpenRosa door."""
        door = f"{base}/v1/key/{e['COLLECTOR']}/orgs/{e['ORG']}"
        listing = requests.get(f"{door}/formList", headers={"X-OpenRosa-Version": "1.0"}).text
        listed = [x for x in listing.split("<xform>")[1:] if f"<formID>{form_id}</formID>" in x]
        url = re.findall(r"<manifestUrl>([^<]+)</manifestUrl>", listed[0]) if listed else []
        if not url:
            return None
        r = requests.get(url[0].replace("&amp;", "&"), headers={"X-OpenRosa-Version": "1.0"})
        names = re.findall(r"<filename>([^<]+)</filename>", r.text)
        urls = [u.replace("&amp;", "&") for u in re.findall(r"<downloadUrl>([^<]+)</downloadUrl>", r.text)]
        return {n: requests.get(u, headers={"X-OpenRosa-Version": "1.0"}).content for n, u in zip(names, urls)}

    def surveys():
        r = requests.get(f"{base}/v1/orgs/{e['ORG']}/surveys", params={"limit": "200"}, headers={"Authorization": "Bearer " + e["ADMIN"]})
        return r.json()["items"]

    # An XLSForm naming a CSV file: created as a draft, the file uploaded to it, then published.
    xlsx = os.path.join(ROOT, "Tests", "Fixtures", "central_sites.xlsx")
    made = a.forms.create(definition=xlsx, attachments=[sites])
    check(made.xmlFormId == "central_sites" and made.version == "1" and made.name == "Site count" and made.publishedAt is None,
          f"forms.create answers the draft it made: {made}")
    got = a.forms.get("central_sites")
    check(got.publishedAt is not None and got.version == "1", f"forms.create publishes the draft: {got}")
    check(manifest("central_sites") == {"sites.csv": open(sites, "rb").read()}, f"the file is in the form's manifest: {manifest('central_sites')}")
    check([x["reviewRequired"] for x in surveys() if x["title"] == "Site count"] == [True], "the survey requires review")

    # An XForm held as a string.
    trees = a.forms.create(definition=trees_xform("1"))
    check(trees.xmlFormId == "py_trees" and a.forms.get("py_trees").version == "1", f"forms.create from an XForm: {trees}")
    count = len(surveys())
    try:
        a.forms.create(definition=trees_xform("2", title="Another tree count"))
        check(False, "a form id in use is refused")
    except PyODKError as err:
        check(err.is_central_error("409.3"), f"409.3: {err}")
    check(len(surveys()) == count, "a refused create makes no survey")

    # A new definition; then only a new file, the version set by version_updater.
    a.forms.update("py_trees", definition=trees_xform("2"))
    check(a.forms.get("py_trees").version == "2" and 'version="2"' in a.forms.get_xml("py_trees"), "forms.update with a new definition")
    a.forms.update("central_sites", attachments=[later], version_updater=lambda v: v + "-sites2")
    got = a.forms.get("central_sites")
    check(got.version == "1-sites2" and 'version="1-sites2"' in a.forms.get_xml("central_sites"), f"version_updater sets the version: {got}")
    check(manifest("central_sites") == {"sites.csv": open(later, "rb").read()}, "the new file replaces the old in the manifest")
    try:
        a.forms.update("central_sites", attachments=[later], version_updater=lambda v: "1")
        check(False, "a version published already is refused")
    except PyODKError as err:
        check("422" in str(err) and "version" in str(err), f"a version published already: {err}")
    check(a.forms.get("central_sites").version == "1-sites2", "the refused publication changed nothing")
    # No definition and no version_updater: the version is a timestamp.
    a.forms.update("py_trees", attachments=[])
    check(a.forms.get("py_trees").version not in ("", "2"), f"forms.update's default version: {a.forms.get('py_trees').version}")

    # While expired nothing is made; after renewal the same call makes it once.
    set_expiry(base, e, timedelta(minutes=-1))
    count = len(surveys())
    try:
        a.forms.create(definition=trees_xform("1", title="Shrub count").replace("py_trees", "py_shrubs"))
        check(False, "an expired subscription refuses the form")
    except PyODKError as err:
        check(err.is_central_error("402.1001"), f"forms.create while expired: {err}")
    check(len(surveys()) == count, "nothing made while expired")
    set_expiry(base, e, timedelta(days=1))
    a.forms.create(definition=trees_xform("1", title="Shrub count").replace("py_trees", "py_shrubs"))
    check(len([x for x in surveys() if x["title"] == "Shrub count"]) == 1, "after renewal the same call makes it once")

    # A collector's script may not make forms.
    try:
        client(server, server.dir).forms.create(definition=trees_xform("1", title="Bush count").replace("py_trees", "py_bushes"))
        check(False, "a collector is refused")
    except PyODKError as err:
        check(err.is_central_error("403.1"), f"403.1: {err}")


def app_users(server, base, e, form_id):
    """App users made in bulk for a new district, as a team's script does."""
    a = client(server, server.dir, email="ada@example.org")
    made = list(a.projects.create_app_users(display_names=["North 1", "North 2"], forms=[form_id]))
    check([u.displayName for u in made] == ["North 1", "North 2"] and all(u.type == "field_key" and u.token for u in made), f"create_app_users: {made}")
    for u in made:
        r = requests.get(f"{base}/v1/key/{u.token}/orgs/{e['ORG']}/formList", headers={"X-OpenRosa-Version": "1.0"})
        check(r.status_code == 200 and form_id in r.text, f"{u.displayName}'s token opens the form list: {r.status_code}")
    again = list(a.projects.create_app_users(display_names=["North 1", "North 2"], forms=[form_id]))
    check(again == [], f"run again, it makes no one twice: {again}")
    listed = [u.displayName for u in a.project_app_users.list()] if hasattr(a, "project_app_users") else None
    check(listed is None or listed.count("North 1") == 1, f"app users listed once: {listed}")
    try:
        a.projects.create_app_users(display_names=["North 3"], forms=["no_such_form"])
        check(False, "an assignment to a form that is not here is refused")
    except PyODKError as err:
        check("404" in str(err), f"404 for an unknown form: {err}")


def main():
    server = Server(prefix="surveyd-central-")
    e, base = server.env, server.url
    try:
        user = console_collector(base, e)
        c = client(server, server.dir)

        projects = c.projects.list()
        check([(p.id, p.name) for p in projects] == [(1, "Demo Field Team")], f"projects.list: {projects}")
        listed = c.forms.list()
        check(len(listed) == 1 and listed[0].projectId == 1 and listed[0].state == "open", f"forms.list: {listed}")
        form = listed[0]
        xml = c.forms.get_xml(form_id=form.xmlFormId)
        check(f'id="{form.xmlFormId}"' in xml and hashlib.md5(xml.encode()).hexdigest() == form.hash, "forms.get_xml: the XForm whose MD5 is the form's hash")

        first = "uuid:" + str(uuid.uuid4())
        made = c.submissions.create(xml=instance(form.xmlFormId, form.version, first, 3), form_id=form.xmlFormId)
        check(made.instanceId == first and made.submitterId == user["actorId"], f"submissions.create: {made}")
        check(len(stored(base, e, first)) == 1, "the submission is stored once")
        again = c.submissions.create(xml=instance(form.xmlFormId, form.version, first, 3), form_id=form.xmlFormId)
        check(again.instanceId == first and len(stored(base, e, first)) == 1, "a resend is the same submission, stored once")
        listed = c.submissions.list(form_id=form.xmlFormId)
        check([s.instanceId for s in listed] == [first], f"submissions.list: {listed}")
        got = c.submissions.get(form_id=form.xmlFormId, instance_id=first)
        check(got.instanceId == first and got.reviewState is None, f"submissions.get: {got}")

        # Expired: pyodk raises with surveyd's 402 / 1001 in its text; nothing is stored.
        set_expiry(base, e, timedelta(minutes=-1))
        later = "uuid:" + str(uuid.uuid4())
        try:
            c.submissions.create(xml=instance(form.xmlFormId, form.version, later, 5), form_id=form.xmlFormId)
            check(False, "an expired subscription refuses the submission")
        except PyODKError as err:
            check("Status: 402" in str(err) and "1001" in str(err) and err.is_central_error("402.1001"), f"402 / 1001: {err}")
        check(stored(base, e, later) == [], "nothing is stored while the subscription is expired")
        # Reads are never gated.
        check(len(c.submissions.list(form_id=form.xmlFormId)) == 1, "submissions.list while expired")
        set_expiry(base, e, timedelta(days=1))
        retried = c.submissions.create(xml=instance(form.xmlFormId, form.version, later, 5), form_id=form.xmlFormId)
        check(retried.instanceId == later and len(stored(base, e, later)) == 1, "after renewal the same call stores it once")

        # The same instanceID with other content is a conflict (409.3), and changes nothing.
        try:
            c.submissions.create(xml=instance(form.xmlFormId, form.version, later, 7), form_id=form.xmlFormId)
            check(False, "other content under a used instanceID is refused")
        except PyODKError as err:
            check(err.is_central_error("409.3"), f"409.3: {err}")
        check([x["answers"].get("household_size") for x in stored(base, e, later)] == [5], "the stored submission is unchanged")

        # An edit (`submissions.edit`): an instance whose deprecatedID is the current instanceID;
        # a new version of the same submission, in state edited. A stale deprecatedID is 409.1021.
        edited = "uuid:" + str(uuid.uuid4())
        c.submissions.edit(instance_id=later, xml=instance(form.xmlFormId, form.version, edited, 6, replaces=later), form_id=form.xmlFormId)
        now = stored(base, e, later)
        check([(x["answers"].get("household_size"), x["reviewState"]) for x in now] == [(6, "edited")], f"submissions.edit: {now}")
        versions = requests.get(f"{base}/v1/orgs/{e['ORG']}/responses/{now[0]['responseId']}/versions",
                                headers={"Authorization": "Bearer " + e["ADMIN"]}).json()["items"]
        check([v["answers"]["household_size"] for v in versions] == [5, 6], f"both versions are kept: {versions}")
        check(c.submissions.get(form_id=form.xmlFormId, instance_id=later).reviewState == "edited", "Central's reviewState reads edited")
        try:
            c.submissions.edit(instance_id=later, xml=instance(form.xmlFormId, form.version, "uuid:" + str(uuid.uuid4()), 8, replaces=later),
                               form_id=form.xmlFormId)
            check(False, "an edit of an earlier version is refused")
        except PyODKError as err:
            check(err.is_central_error("409.1021"), f"409.1021: {err}")
        check([x["answers"].get("household_size") for x in stored(base, e, later)] == [6], "a stale edit changes nothing")

        # Review: refused while expired (nothing changes), then approved through surveyd's steps.
        def review_state(instance_id):
            return [x["reviewState"] for x in stored(base, e, instance_id)]
        set_expiry(base, e, timedelta(minutes=-1))
        try:
            c.submissions.review(instance_id=first, review_state="approved", form_id=form.xmlFormId)
            check(False, "an expired subscription refuses the review")
        except PyODKError as err:
            check(err.is_central_error("402.1001"), f"review while expired: {err}")
        check(review_state(first) == ["submitted"], f"the review state is unchanged while expired: {review_state(first)}")
        set_expiry(base, e, timedelta(days=1))
        c.submissions.review(instance_id=first, review_state="approved", form_id=form.xmlFormId)
        check(review_state(first) == ["approved"], f"submissions.review approved it: {review_state(first)}")
        check(c.submissions.get(form_id=form.xmlFormId, instance_id=first).reviewState == "approved", "Central's reviewState reads approved")

        submission_files(c, server, base, e, form, user)

        # A wrong password: pyodk raises at sign-in (401.2), and signs in nothing.
        try:
            client(server, server.dir, password="not the password at all").projects.list()
            check(False, "a wrong password is refused")
        except PyODKError as err:
            check("401" in str(err), f"a wrong password: {err}")

        # A Central route surveyd does not offer: 501 / 1050 naming what it offers instead.
        try:
            c.session.response_or_error(method="GET", url=c.session.urlformat("projects/1/forms/{f}/submissions.csv", f=form.xmlFormId),
                                        logger=QUIET)
            check(False, "a form's CSV export is not offered through this door")
        except PyODKError as err:
            check("Status: 501" in str(err) and "1050" in str(err) and "responses.csv" in str(err), f"501 / 1050: {err}")

        submission_table(c, base, e, form, user)
        entities(server, base, e)
        forms(server, base, e)
        app_users(server, base, e, form.xmlFormId)
    finally:
        server.stop()
        # The server's log stays for a failing run to be read; a passing run leaves nothing.
        if not FAILURES:
            shutil.rmtree(server.dir, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("pyodk against surveyd: every check passed")


if __name__ == "__main__":
    main()
