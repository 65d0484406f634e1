-- pgbench script: the transaction surveyd runs for one new submission on PostgreSQL, statement
-- for statement and round trip for round trip as the server sends it once the survey version is
-- cached (read from a cluster started with log_statement=all). PostgresWriters runs each job in
-- its own READ COMMITTED transaction inside a savepoint. The first pipeline: BEGIN, SAVEPOINT,
-- the gate's read of the org row FOR SHARE (under the organization's shared advisory lock),
-- the replay check on the client submission id, the organization and the caller's token, which
-- the server awaits. It then checks the caller, the version and the answers, and sends the second
-- pipeline: the response INSERT, the audit INSERT (which takes AuditHorizon's shared advisory
-- lock in its FROM) and COMMIT. Run with -M prepared, as the server prepares its statements.
-- That is a submission arriving alone. Under load surveyd sends the first pipeline of the next
-- submission right after the COMMIT, in the same round trip (Docs/postgresql.md, "Round trips"):
-- the same statements and transactions in fewer round trips, which a pgbench script, one
-- transaction per run, cannot write.
-- (No colons in literals here: pgbench would take ":abc" inside a string for a variable.)
--
-- Variables (pgbench -D; Benchmarks/postgres.sh sets them from the seeded data):
--   org user survey version   the seeded organization, collector, survey and version ids
--   answers                   the canonical answers JSON (Benchmarks/fixtures/answers.json)
--   digest sha256             a request digest ("sha256:<hex>") and the same 32 bytes ("\x<hex>")
--   base                      a round's starting number: ids are base + n*100 + client_id
--   tokenhash                 the SHA-256 of the collector's token ("\x<hex>")
--   now                       ms since the epoch, for received_at and the audit time
--   n                         0 at start; each client counts its transactions in it
--
-- Ids: the response id grows with time (as surveyd's UUIDv7 ids do); the client submission id
-- starts with a hash, so it lands all over the (org_id, client_submission_id) index (as the wrk
-- script's scrambled ids and real phones' random UUIDs do).
\set n :n + 1
\set rid :base + :n * 100 + :client_id
\set scramble hash(:rid)
\set at :now + :n
\startpipeline
BEGIN;
SAVEPOINT job;
SELECT expires_at FROM orgs WHERE org_id = :org AND pg_advisory_xact_lock_shared(1398079492, hashtext(:org)) IS NOT NULL FOR SHARE;
SELECT response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, request_digest, request_sha256,
    request_body, answers, field_task_id, captured_at, received_at, review_state, revision, accepted_survey_version_id
    FROM responses WHERE org_id = :org AND client_submission_id = :scramble::text || '-pgbench-' || :rid::text;
SELECT org_id, name, expires_at, created_at FROM orgs WHERE org_id = :org;
SELECT t.token_id, t.is_operator, t.token_hash, u.user_id, u.org_id, u.name, u.roles, u.active
    FROM tokens t LEFT JOIN users u ON u.user_id = t.user_id
    WHERE t.token_hash = :tokenhash AND t.revoked_at IS NULL;
\endpipeline
\startpipeline
INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
    request_digest, request_body, request_sha256, answers, field_task_id, captured_at, received_at, review_state, revision)
VALUES ('rsp_' || :rid::text, :org, :scramble::text || '-pgbench-' || :rid::text, :user, :survey, :version,
    :digest, '\x', :sha256, :answers, NULL, 1748764800000, :at, 'submitted', 1);
INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)
SELECT :org, :user, 'response.accept', 'response', 'rsp_' || :rid::text, CAST(1 AS BIGINT),
    '{"clientSubmissionId":"' || :scramble::text || '-pgbench-' || :rid::text || '","toState":"submitted"}', CAST(:at AS BIGINT)
FROM pg_advisory_xact_lock_shared(91625918693378);
COMMIT;
\endpipeline
