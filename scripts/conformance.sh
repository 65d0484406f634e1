#!/usr/bin/env bash
# Conformance: a real surveyd with a seeded organization, schemathesis (PyPI, pinned 4.x) run
# against Schemas/openapi.json over every operation with valid tokens, at least 100 generated
# cases per operation, plus stateful sequences along the document's links, with every check
# (`--checks all`). Fails on any server error, any response breaking its schema, any undocumented
# status code, content type or header, any undeclared method not answered 405 with a correct
# Allow, any schema-breaking request accepted and any schema-valid one refused — but for the
# listed answers a schema cannot predict (the state a request meets; tus's 412).
#   CONFORMANCE_CHECKS=a,b ./scripts/...        # other checks than all
#
#   ./scripts/conformance.sh                  # build, start, run every pass, stop
#   SURVEYD_BIN=path/to/surveyd ./scripts/...  # use an already built binary (skips the build)
#   CONFORMANCE_EXAMPLES=300 ./scripts/...     # more cases per operation (default 100)
#   CONFORMANCE_PASSES="admin"                 # which passes: admin all operator sessions (default: all four)
#   CONFORMANCE_EXCLUDE='^tus'                 # temporarily skip operationIds matching a regex
#                                              # (e.g. while a route is being built); default none
#   CONFORMANCE_INCLUDE='^central'             # run only the operationIds matching a regex
#
# Passes (each with its own token; all against one server):
#   admin     the demo's admin token, every operation (the baseline)
#   all       a user holding admin+collector+reviewer, every operation (reaches collector and
#             reviewer code paths past the role checks)
#   operator  the operator token, the operator's operations (orgs, subscription, users, metrics)
# Reports (JUnit XML and NDJSON events) go to $CONFORMANCE_REPORT_DIR (default .build/conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="/opt/swift/usr/bin:$PATH"

SCHEMATHESIS_VERSION="4.32.5"
JSONSCHEMA_VERSION="4.26.0"
VENV="${CONFORMANCE_VENV:-$ROOT/.build/venv}"
EXAMPLES="${CONFORMANCE_EXAMPLES:-100}"
PASSES="${CONFORMANCE_PASSES:-admin all operator sessions}"
EXCLUDE="${CONFORMANCE_EXCLUDE:-}"
INCLUDE="${CONFORMANCE_INCLUDE:-}"
REPORT_DIR="${CONFORMANCE_REPORT_DIR:-$ROOT/.build/conformance}"
mkdir -p "$REPORT_DIR"

# --- Python tools -------------------------------------------------------------------------
installed="$("$VENV/bin/pip" show schemathesis 2>/dev/null || true)"
if [ ! -x "$VENV/bin/schemathesis" ] || ! grep -qx "Version: $SCHEMATHESIS_VERSION" <<<"$installed"; then
  echo "conformance: installing schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" "jsonschema==$JSONSCHEMA_VERSION"
fi
PY="$VENV/bin/python"

# --- the server ---------------------------------------------------------------------------
if [ -z "${SURVEYD_BIN:-}" ]; then
  swift build --product surveyd >&2
  SURVEYD_BIN="$ROOT/.build/debug/surveyd"
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/surveyd-conformance.XXXXXX")"
PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
BASE="http://127.0.0.1:$PORT"
"$SURVEYD_BIN" serve --demo --port "$PORT" --data-dir "$WORK/data" >"$WORK/stdout.log" 2>"$WORK/stderr.log" &
SERVER_PID=$!
cleanup() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  grep -q '^ *export ORG=' "$WORK/stdout.log" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "conformance: surveyd exited:" >&2; cat "$WORK/stderr.log" >&2; exit 1; }
  sleep 0.1
done
EXPORT_LINE="$(grep -m1 -o 'export ORG=.*' "$WORK/stdout.log")" || { echo "conformance: no export line from the demo" >&2; exit 1; }
eval "$EXPORT_LINE"
export ORG OP ADMIN COLLECTOR REVIEWER VERSION HASH
echo "conformance: surveyd at $BASE (org $ORG)" >&2

# --- seed: users, webhooks, responses, a task and an upload to aim at; the spec's examples pointed at them ---
# The generated cases reach past "not found" only with real ids: schemathesis takes them from the
# dictionaries of the configuration written here (with a probability, so unknown ids are tried
# too), and the examples phase from a copy of Schemas/ whose example ids (the fixed placeholders
# of the committed documents) are replaced by this server's.
mkdir -p "$WORK/spec"
"$PY" - "$BASE" "$WORK" "$ROOT/Schemas" <<'PYEOF'
import base64, glob, json, os, sys, urllib.request, uuid
base, work, schemas = sys.argv[1], sys.argv[2], sys.argv[3]
E = os.environ
def call(method, path, token, body=None, expect=(200, 201), headers=None, raw=None):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(base + path, method=method, data=data, headers=h)
    try:
        with urllib.request.urlopen(req) as r:
            status, out = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, out = e.code, e.read()
    if status not in expect:
        sys.exit(f"conformance seed: {method} {path} answered {status}: {out[:300]!r}")
    return json.loads(out) if out else None
org, version, hash_ = E["ORG"], E["VERSION"], E["HASH"]
def user(name, roles):
    return call("POST", f"/v1/orgs/{org}/users", E["ADMIN"], {"name": name, "roles": roles})
everyone = user("Conformance All Roles", ["admin", "collector", "reviewer"])
victim = user("Conformance Victim", ["collector"])      # path userId/tokenId: may be deactivated
assignee = user("Conformance Assignee", ["collector"])  # body assigneeUserId: stays a collector
# Webhooks, made before the writes below so that those record deliveries: one to aim every
# webhook operation at, and one that only deleteWebhook aims at. Their host is under .invalid
# (RFC 6761: never resolves), which creation accepts; every attempt fails and waits for its retry.
EVENT_TYPES = ["response.accepted", "response.resubmitted", "response.review", "upload.completed", "task.completed"]
hook = call("POST", f"/v1/orgs/{org}/webhooks", E["ADMIN"], {"url": "https://hooks.invalid/surveyd", "events": EVENT_TYPES, "description": "Conformance"}, expect=(201,))
doomed = call("POST", f"/v1/orgs/{org}/webhooks", E["ADMIN"], {"url": "https://hooks.invalid/doomed", "events": ["task.completed"]}, expect=(201,))
v = call("GET", f"/v1/orgs/{org}/survey-versions/{version}", E["ADMIN"])
survey_id = v["surveyId"]
file_questions = [q["id"] for q in v["definition"]["questions"] if q["type"] == "file"]
answers = {"household_size": 3, "water_source": "well"}
def submit(token, extra=None):
    body = {"clientSubmissionId": "conformance-" + uuid.uuid4().hex, "surveyVersionId": version, "contentHash": hash_, "answers": answers}
    body.update(extra or {})
    return call("POST", f"/v1/orgs/{org}/responses", token, body)
r1 = submit(E["COLLECTOR"])
r2 = submit(everyone["token"])
task = call("POST", f"/v1/orgs/{org}/tasks", E["ADMIN"], {"title": "Conformance task", "surveyId": survey_id, "assigneeUserId": everyone["userId"]})
png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")
upload_id = "conformance-upload-" + uuid.uuid4().hex[:12]
call("PUT", f"/v1/orgs/{org}/uploads/{upload_id}", everyone["token"], raw=png,
     headers={"Content-Type": "image/png", "Survey-Version-Id": version, "Question-Id": file_questions[0]})
# An entity list (a form that writes it) with two entities, for the entity operations to reach past 404.
points = call("POST", f"/v1/orgs/{org}/surveys", E["ADMIN"], {"title": "Conformance water points"})
call("POST", f"/v1/orgs/{org}/surveys/{points['surveyId']}/versions", E["ADMIN"], {"definition": {
    "title": "Water points", "questions": [{"id": "point", "type": "text", "label": "Name"}, {"id": "flow", "type": "integer", "label": "Flow"}],
    "entity": {"list": "conformance_points", "create": True, "saveTo": {"point": "point_name", "flow": "flow"}}}}, expect=(201,))
entity_ids = [call("POST", f"/v1/orgs/{org}/entity-lists/conformance_points/entities", E["ADMIN"],
                   {"label": f"Point {i}", "properties": {"point_name": f"Point {i}", "flow": "12"}}, expect=(201,))["id"] for i in (1, 2)]
deliveries = call("GET", f"/v1/orgs/{org}/webhooks/{hook['webhookId']}/deliveries", E["ADMIN"])["items"]
if not deliveries:
    sys.exit("conformance seed: the seeded writes recorded no webhook delivery")
with open(os.path.join(work, "all.token"), "w") as f:
    f.write(everyone["token"])

# The spec, with its placeholder example ids replaced by this server's.
b64 = lambda s: base64.b64encode(s.encode()).decode()
placeholders = {
    "org_01a22889-b533-7269-b708-e13482f17a2b": org,
    "sv_01a22889-b536-76df-ad79-1d8b578fe595": version,
    b64("sv_01a22889-b536-76df-ad79-1d8b578fe595"): b64(version),
    "sha256:c8aee4f9d8b22709998a88bd1d4ee9dd09fbb2962f1e9e1c1662f9690a619e09": hash_,
    "srv_01a22889-b535-7ba4-94fb-49fc64df49e0": survey_id,
    "usr_01a22889-b534-7b61-9d5e-0c4b4e7ac9a1": assignee["userId"],
}
for src in glob.glob(os.path.join(schemas, "*.json")):
    text = open(src).read()
    for old, new in placeholders.items():
        text = text.replace(old, new)
    open(os.path.join(work, "spec", os.path.basename(src)), "w").write(text)

def q(x): return json.dumps(x)
def dictionary(name, values): return [f"[dictionaries.{name}]", "values = [" + ", ".join(q(x) for x in values) + "]"]
lines = ["# generated by scripts/conformance.sh for one run"]
lines += dictionary("versions", [version]) + dictionary("hashes", [hash_]) + dictionary("surveys", [survey_id])
lines += dictionary("responses", [r1["responseId"], r2["responseId"]]) + dictionary("csids", [r1["clientSubmissionId"], r2["clientSubmissionId"]])
lines += dictionary("victims", [victim["userId"]]) + dictionary("tokens", [victim["tokenId"]]) + dictionary("assignees", [assignee["userId"], everyone["userId"]])
lines += dictionary("tasks", [task["taskId"]]) + dictionary("uploads", [upload_id]) + dictionary("questions", file_questions)
lines += dictionary("webhooks", [hook["webhookId"]]) + dictionary("doomedWebhooks", [doomed["webhookId"]])
lines += dictionary("deliveries", [d["deliveryId"] for d in deliveries])
lines += dictionary("entityLists", ["conformance_points"]) + dictionary("entities", entity_ids)
# Receivers whose host never resolves: most generated webhooks point there rather than at random hosts.
lines += dictionary("receivers", ["https://hooks.invalid/surveyd", "http://hooks.invalid:8080/in?source=surveyd"])
# Fresh client ids and keys: without them most generated writes reuse an example's id with
# another body and stop at 1004, never reaching validation or the write itself.
lines += dictionary("fresh", [str(uuid.uuid4()) for _ in range(500)])
lines += dictionary("xmlFormIds", [survey_id]) + dictionary("instanceIds", [r1["clientSubmissionId"], r2["clientSubmissionId"]])
lines += dictionary("roleIds", [2]) + dictionary("actors", [assignee["actorId"]])
lines += ["[parameters]", f'"path.orgId" = {q(org)}', '"path.projectId" = 1']
for key, name, p in [("path.surveyId", "surveys", 0.5), ("path.surveyVersionId", "versions", 0.5), ("path.responseId", "responses", 0.6),
                     ("path.userId", "victims", 0.5), ("path.tokenId", "tokens", 0.3), ("path.taskId", "tasks", 0.5),
                     ("path.clientUploadId", "uploads", 0.4), ("query.clientSubmissionId", "csids", 0.4),
                     ("header.Survey-Version-Id", "versions", 0.6), ("header.Question-Id", "questions", 0.6),
                     ("body.surveyVersionId", "versions", 0.7), ("body.contentHash", "hashes", 0.7), ("body.surveyId", "surveys", 0.6),
                     ("body.assigneeUserId", "assignees", 0.6), ("body.fieldTaskId", "tasks", 0.3),
                     ("body.clientSubmissionId", "fresh", 0.8), ("header.Idempotency-Key", "fresh", 0.6),
                     ("query.surveyVersionId", "versions", 0.5), ("query.fieldTaskId", "tasks", 0.5), ("query.submittedBy", "assignees", 0.5),
                     ("path.xmlFormId", "xmlFormIds", 0.7), ("path.instanceId", "instanceIds", 0.6),
                     ("path.roleId", "roleIds", 0.6), ("path.actorId", "actors", 0.6),
                     ("path.webhookId", "webhooks", 0.6), ("path.name", "entityLists", 0.7), ("path.entityId", "entities", 0.6), ("path.uuid", "entities", 0.6), ("path.deliveryId", "deliveries", 0.6), ("body.url", "receivers", 0.7)]:
    lines.append(f'"{key}" = {{ dictionary = "{name}", probability = {p} }}')
# --checks all: the answers a schema cannot predict, each with its reason (Docs/architecture.md).
# tus demands 412 (not 400) for a missing or unsupported Tus-Resumable header, and 413 is the
# answer to an Upload-Length or body past a limit.
lines += ["[checks.negative_data_rejection]", 'expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "412", "413", "415", "422", "428", "429", "5xx"]',
          "[checks.missing_required_header]", 'expected-statuses = ["400", "401", "403", "406", "412", "415", "422"]']
# Schema-valid requests refused by the state they meet, which no schema describes: the assignee
# is not an active collector, the user is deactivated (or another user holds the email), the answers break this version's rules, the
# bytes are not the declared type, the state moved on — each with its own code from the table;
# and tus's Upload-Metadata, whose base64 values the schema cannot look inside (400 / 1031, 1032);
# likewise a published form's part, a file whose bytes may be no form at all (400 / 1031, as a
# JSON definition that does not parse).
for op, statuses in [("createTask", ["422"]), ("createToken", ["422"]), ("inviteUser", ["422"]), ("submitResponse", ["413", "422"]),
                     ("resubmitResponse", ["413", "422"]), ("reviewResponse", ["422"]), ("publishVersion", ["400", "413", "422"]),
                     ("putUpload", ["413", "415", "422"]), ("tusCreate", ["400", "413", "415", "422"]), ("tusPatch", ["410", "413", "415", "422", "460"]),
                     ("tusHead", ["410"]), ("tusDelete", ["410"]),
                     # Exports: a well-formed cursor past the newest one this server issued and a
                     # date-time no calendar has (a leap second) are 400 / 1031; a geoField that is
                     # not a geopoint question of the survey is 422 / 1002.
                     ("exportResponsesCsv", ["400"]), ("exportResponsesXlsx", ["400"]), ("exportResponsesZip", ["400"]),
                     ("exportResponsesGeoJSON", ["400", "422"]),
                     # The changes feed: a cursor of the right shape that this server never sealed
                     # for the organization is 422 / 1002 at `after`.
                     ("listChanges", ["422"]),
                     # An entity's versions: the cursor is a version number; any other string is
                     # 422 / 1002 at `after`.
                     ("listEntityVersions", ["422"]),
                     # Entity writes: the list's properties (an unknown one is 422 / 1002), an id the
                     # list already has (409 / 1004), and the entity's version (a stale baseVersion is
                     # 409 / 1021) are state no schema has.
                     ("createEntity", ["409", "422"]), ("updateEntity", ["409", "422"]),
                     # A list name the organization has is 409 / 1004; a reserved property name
                     # (`name`, `label`, `__…`) 422 / 1002.
                     ("createEntityList", ["409", "422"]),
                     # Webhooks: a URL whose host is or resolves to a private, loopback, link-local,
                     # CGNAT, multicast or unspecified address (e.g. "http://0") is 422 / 1002, which
                     # needs a DNS answer no schema has.
                     ("createWebhook", ["422"]), ("updateWebhook", ["422"]),
                     # An edit's answers are checked against the response's survey version (422 /
                     # 1002 for answers it lacks the questions of), and its expectedRevision
                     # against the response's (409 / 1021).
                     ("editResponseAnswers", ["409", "422"])]:
    lines += ["[[operations]]", f"include-operation-id = {q(op)}",
              "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "409", "429"] + statuses)]
# The OData feed: its query options are OData expressions in strings (`$filter`, `$orderby`,
# `$select`, `$expand`, `$skiptoken`, `$format`), whose grammar no schema describes. A
# schema-valid one the feed cannot read is 400, and one it reads but does not implement is 501
# with OData's error body (never a silently wrong result): both documented on the operation.
# A feed takes HTTP Basic, so every wrong credential is a sign-in attempt: past ten from one
# address in fifteen minutes the answer is 429 / 1030 (the console's throttle), which the check of
# invalid credentials (ignored_auth) does not expect. The feeds' 401s are tested end to end
# (ODataTests, EntityListODataTests). The same feeds under ODK Central's paths take a bearer
# token only, as every Central route: their credentials are checked as usual.
for op in ["odataEntitySet", "odataServiceDocument", "odataMetadata", "entityListODataEntitySet", "entityListODataServiceDocument", "entityListODataMetadata",
           "centralFormODataEntitySet", "centralFormODataServiceDocument", "centralFormODataMetadata",
           "centralDatasetODataEntitySet", "centralDatasetODataServiceDocument", "centralDatasetODataMetadata"]:
    lines += ["[[operations]]", f"include-operation-id = {q(op)}",
              "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "400", "401", "403", "404", "429", "501"]),
              "checks.not_a_server_error.expected-statuses = " + q(["2xx", "3xx", "4xx", "501"])]
    if not op.startswith("central"):
        lines.append("checks.ignored_auth.enabled = false")
# deleteEntity is a soft delete that restoreEntity undoes, and keyed: a DELETE whose key was used
# before is the stored 204 again and changes nothing (the contract's replay), so an entity restored
# since is still there. Reading it afterwards is not a use after free.
lines += ["[[operations]]", 'include-operation-id = "deleteEntity"', "checks.use_after_free.enabled = false"]
# ODK Central's API: its ids come from this server (project 1 is the demo organization; a form
# is named by its XForm's id, which for a JSON survey is the survey id; an instanceID is a
# clientSubmissionId). Signing in with a schema-valid email and password that are no user's is
# 401 / 1007, and the attempts that follow are throttled (429 / 1030), as the console's; an
# instance XML that schema-valid strings almost never make is refused by the XML rules (400 /
# 1031), its form (404) or its answers (422) — the state and grammar no schema describes.
lines += ["[[operations]]", 'include-operation-id = "centralCreateSession"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "429"])]
lines += ["[[operations]]", 'include-operation-id = "centralCreateSubmission"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "400", "401", "403", "404", "409", "422", "429", "501"])]
# An edit through Central's PUT is an instance XML as for a new submission (400 / 1031, 404, 422),
# whose deprecatedID must be the submission's current instanceID (409 / 1021).
lines += ["[[operations]]", 'include-operation-id = "centralEditSubmission"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "400", "401", "403", "404", "409", "422", "429", "501"])]
lines += ["[[operations]]", 'include-operation-id = "centralSetReviewState"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "409", "429"])]
lines += ["[[operations]]", 'include-operation-id = "centralListSubmissionAttachments"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "501"]),
          "checks.not_a_server_error.expected-statuses = " + q(["2xx", "3xx", "4xx", "501"])]
# Central's entity lists and entities: the same state as surveyd's own entity writes (a name the
# organization has, 409.3; a property the list lacks or a reserved property name, 422; a stale
# baseVersion, 409.15), and a PATCH with neither baseVersion nor force=true is 400 (two query
# parameters, one of which is needed: no schema says so). approvalRequired true is 501 / 1050.
for op, statuses in [("centralCreateDataset", ["422", "501"]), ("centralAddDatasetProperty", ["422"]),
                     ("centralCreateEntities", ["422"]), ("centralUpdateEntity", ["400", "422"])]:
    lines += ["[[operations]]", f"include-operation-id = {q(op)}",
              "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "409", "429"] + statuses)]
    if op == "centralCreateDataset":
        lines.append("checks.not_a_server_error.expected-statuses = " + q(["2xx", "3xx", "4xx", "501"]))
# Central's form writes: the body is a form whose grammar no schema has (an XForm or XLSForm that
# cannot be read or published, 422 / 1002; not one of those types, 415), a file the draft's form
# does not name and a version published already are 422, a form id in use is 409.3, and a form
# without a draft (or without a published version to make one of) is 404.
for op in ("centralCreateForm", "centralCreateFormDraft", "centralUploadFormDraftAttachment", "centralPublishFormDraft"):
    lines += ["[[operations]]", f"include-operation-id = {q(op)}",
              "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "409", "413", "415", "422", "429"])]
# Central's app users: a collector's creation, whose Idempotency-Key may have been used with
# another body (409 / 1004). An assignment names a form, an actor and a role: a form that is not
# published and open, or an actor that is no active collector of the project, is 404 (state no
# schema has), and a role id other than 2 is 501 / 1050 (the role is the organization's, not a
# form's; the parameter is an integer, as Central's role ids are).
lines += ["[[operations]]", 'include-operation-id = "centralCreateAppUser"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "409", "429"])]
lines += ["[[operations]]", 'include-operation-id = "centralAssignForm"',
          "checks.positive_data_acceptance.expected-statuses = " + q(["2xx", "401", "403", "404", "501"]),
          "checks.not_a_server_error.expected-statuses = " + q(["2xx", "3xx", "4xx", "501"])]
# A create sent again with its Idempotency-Key is the stored answer (the contract's replay), also
# when that entity was deleted since: reading it then is 404, not a created entity gone missing.
lines += ["[[operations]]", 'include-operation-id = "centralGetEntity"', "checks.ensure_resource_availability.enabled = false"]
# deleteWebhook aims at its own webhook, so that the one every other webhook operation aims at stays.
lines += ["[[operations]]", 'include-operation-id = "deleteWebhook"',
          'parameters = { "path.webhookId" = { dictionary = "doomedWebhooks", probability = 0.5 } }']
open(os.path.join(work, "schemathesis.toml"), "w").write("\n".join(lines) + "\n")
PYEOF
ALL="$(cat "$WORK/all.token")"

# Every check schemathesis has (`all`): server errors, schema, status codes, content types,
# declared headers, 405 + Allow, and that schema-valid requests are accepted and schema-breaking
# ones refused — with the exceptions configured above, each with its reason. One worker: with two, hypothesis' lambda-source parsing crashes CPython
# 3.11's AST module now and then ("AST constructor recursion depth mismatch").
CHECKS="${CONFORMANCE_CHECKS:-all}"
# All but one: a survey just created has no draft, so publishing or discarding its draft is 404 /
# 1005 ("the survey has no draft", the contract's answer), which the stateful phase's
# ensure_resource_availability takes for a created resource gone missing. With --checks all an
# operation's own setting is not consulted, so the check is left out of every pass; the
# end-to-end tests read back what every create made.
OPERATOR_OPS='^(createOrg|getSubscription|putSubscription|createUser|inviteUser|getMetrics)$'

failed=0
run_pass() {
  local name="$1" token="$2"; shift 2
  echo "conformance: pass '$name'" >&2
  local filters=()
  [ -n "$EXCLUDE" ] && filters+=(--exclude-operation-id-regex "$EXCLUDE")
  [ -n "$INCLUDE" ] && filters+=(--include-operation-id-regex "$INCLUDE")
  # From the scratch dir: schemathesis keeps a cache (.schemathesis/) in its working directory.
  if ! (cd "$WORK" && SCHEMATHESIS_HOOKS="$ROOT/scripts/conformance_hooks.py" "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" run "$WORK/spec/openapi.json" \
      --url "$BASE" -H "Authorization: Bearer $token" \
      --max-examples "$EXAMPLES" --checks "$CHECKS" --exclude-checks ensure_resource_availability --workers 1 \
      --phases examples,coverage,fuzzing,stateful --generation-database none --seed "${CONFORMANCE_SEED:-$RANDOM}" \
      --max-failures 200 --continue-on-failure --no-color --output-truncate false \
      --report junit,ndjson --report-dir "$REPORT_DIR/$name" \
      "${filters[@]}" "$@"); then
    echo "conformance: pass '$name' FAILED (report: $REPORT_DIR/$name)" >&2
    failed=1
  fi
}

# Wrong credentials are sign-in attempts, and ten from one address in fifteen minutes make the
# next 429 / 1030 (the console's throttle). So each operation that takes them runs in one pass
# only: the feeds' (HTTP Basic: one wrong pair each, the invalid-credentials probe) in 'all',
# Central's sign-in (every generated email and password) in 'sessions', last.
SIGN_IN_OPS='^(odata.*|entityListOData.*|centralCreateSession)$'
for pass in $PASSES; do
  case "$pass" in
    admin) run_pass admin "$ADMIN" --exclude-operation-id-regex "$SIGN_IN_OPS" ;;
    all) run_pass all "$ALL" --exclude-operation-id-regex '^centralCreateSession$' ;;
    # The operator pass may end the demo org's subscription (PUT with a past date): it runs after
    # every pass whose writes need it.
    operator) run_pass operator "$OP" --include-operation-id-regex "$OPERATOR_OPS" ;;
    # One operation, no links between operations: no stateful phase.
    sessions) run_pass sessions "$ALL" --include-operation-id-regex '^centralCreateSession$' --phases examples,coverage,fuzzing ;;
    *) echo "conformance: unknown pass $pass" >&2; exit 2 ;;
  esac
done

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "conformance: surveyd died during the run" >&2
  tail -20 "$WORK/stderr.log" >&2
  failed=1
fi
if [ "$failed" -ne 0 ]; then
  echo "conformance: FAILED" >&2
  exit 1
fi
echo "conformance: passed ($PASSES; $EXAMPLES cases per operation)" >&2
