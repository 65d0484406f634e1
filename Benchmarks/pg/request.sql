-- pgbench script: every statement surveyd sends PostgreSQL for one new submission once the
-- survey version is cached: the request's read snapshot (BEGIN, the caller's token, the replay
-- check on the client submission id and the organization, in one pipeline; then COMMIT, which
-- surveyd sends without waiting for its answer and pgbench awaits), then the write transaction
-- of submit.sql, round trip for round trip. Run with -M prepared. Variables: those of
-- submit.sql, and tokenhash (the SHA-256 of the collector's token, "\x<hex>").
\set n :n + 1
\set rid :base + :n * 100 + :client_id
\set scramble hash(:rid)
\set at :now + :n
\startpipeline
BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;
SELECT t.token_id, t.is_operator, t.token_hash, u.user_id, u.org_id, u.name, u.roles, u.active
    FROM tokens t LEFT JOIN users u ON u.user_id = t.user_id
    WHERE t.token_hash = :tokenhash AND t.revoked_at IS NULL;
SELECT response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, request_digest, request_body,
    answers, field_task_id, captured_at, received_at, review_state, revision, request_sha256, accepted_survey_version_id
    FROM responses WHERE org_id = :org AND client_submission_id = :scramble::text || '-pgbench-' || :rid::text;
SELECT org_id, name, expires_at, created_at FROM orgs WHERE org_id = :org;
\endpipeline
\startpipeline
COMMIT;
\endpipeline
\startpipeline
BEGIN;
SAVEPOINT job;
SELECT expires_at FROM orgs WHERE org_id = :org AND pg_advisory_xact_lock_shared(1398079492, hashtext(:org)) IS NOT NULL FOR SHARE;
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
