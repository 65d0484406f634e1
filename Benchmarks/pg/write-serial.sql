-- pgbench script: the statements of write.sql, each in a round trip of its own (no pipeline):
-- what the write transaction costs PostgreSQL when a client waits for every answer, as surveyd
-- did before it pipelined (it then also sent the audit lock as a statement of its own: see
-- Docs/performance.md, 2026-12-02). Run with -M prepared; variables: those of submit.sql.
\set n :n + 1
\set rid :base + :n * 100 + :client_id
\set scramble hash(:rid)
\set at :now + :n
BEGIN;
SAVEPOINT job;
SELECT expires_at FROM orgs WHERE org_id = :org AND pg_advisory_xact_lock_shared(1398079492, hashtext(:org)) IS NOT NULL FOR SHARE;
INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
    request_digest, request_body, request_sha256, answers, field_task_id, captured_at, received_at, review_state, revision)
VALUES ('rsp_' || :rid::text, :org, :scramble::text || '-pgbench-' || :rid::text, :user, :survey, :version,
    :digest, '\x', :sha256, :answers, NULL, 1748764800000, :at, 'submitted', 1);
INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)
SELECT :org, :user, 'response.accept', 'response', 'rsp_' || :rid::text, CAST(1 AS BIGINT),
    '{"clientSubmissionId":"' || :scramble::text || '-pgbench-' || :rid::text || '","toState":"submitted"}', CAST(:at AS BIGINT)
FROM pg_advisory_xact_lock_shared(91625918693378);
COMMIT;
