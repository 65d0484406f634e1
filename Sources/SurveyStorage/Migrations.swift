import Foundation

/// Ordered, named schema steps. Each runs in its own IMMEDIATE transaction and records itself in
/// `schema_migrations`; a database that has steps this build does not know is refused.
enum Migrations {
    static let steps: [(name: String, sql: String)] = [
        ("initial", """
        CREATE TABLE orgs (
            org_id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE users (
            user_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            name TEXT NOT NULL,
            roles TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX users_org ON users(org_id, user_id);
        CREATE TABLE tokens (
            token_id TEXT PRIMARY KEY,
            token_hash BLOB NOT NULL UNIQUE,
            user_id TEXT REFERENCES users(user_id),
            is_operator INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            revoked_at INTEGER
        );
        CREATE TABLE audit (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            org_id TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            target_type TEXT NOT NULL,
            target_id TEXT NOT NULL,
            revision INTEGER,
            detail TEXT,
            at INTEGER NOT NULL
        );
        CREATE INDEX audit_target ON audit(org_id, target_type, target_id, seq);
        CREATE TABLE surveys (
            survey_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            title TEXT NOT NULL,
            review_required INTEGER NOT NULL,
            created_by TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX surveys_org ON surveys(org_id, survey_id);
        CREATE TABLE survey_versions (
            survey_version_id TEXT PRIMARY KEY,
            survey_id TEXT NOT NULL REFERENCES surveys(survey_id),
            org_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            definition TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (survey_id, number)
        );
        CREATE TABLE responses (
            response_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            client_submission_id TEXT NOT NULL,
            submitter TEXT NOT NULL,
            survey_id TEXT NOT NULL,
            survey_version_id TEXT NOT NULL REFERENCES survey_versions(survey_version_id),
            request_digest TEXT NOT NULL,
            request_body BLOB NOT NULL,
            answers TEXT NOT NULL,
            field_task_id TEXT,
            captured_at INTEGER,
            received_at INTEGER NOT NULL,
            review_state TEXT NOT NULL,
            revision INTEGER NOT NULL,
            UNIQUE (org_id, client_submission_id)
        );
        CREATE INDEX responses_list ON responses(org_id, review_state, response_id);
        CREATE INDEX responses_submitter ON responses(org_id, submitter, response_id);
        """),
        ("uploads", """
        CREATE TABLE uploads (
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            client_upload_id TEXT NOT NULL,
            uploader TEXT NOT NULL,
            survey_version_id TEXT NOT NULL REFERENCES survey_versions(survey_version_id),
            question_id TEXT NOT NULL,
            content_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            received_at INTEGER NOT NULL,
            PRIMARY KEY (org_id, client_upload_id)
        );
        CREATE INDEX uploads_sha ON uploads(sha256);
        CREATE TABLE resumable_uploads (
            upload_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            client_upload_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            survey_version_id TEXT NOT NULL,
            question_id TEXT NOT NULL,
            content_type TEXT NOT NULL,
            length INTEGER NOT NULL,
            received_bytes INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (org_id, client_upload_id)
        );
        """),
        ("tasks_review_idempotency", """
        CREATE TABLE tasks (
            task_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            title TEXT NOT NULL,
            survey_id TEXT NOT NULL REFERENCES surveys(survey_id),
            assignee_user_id TEXT NOT NULL REFERENCES users(user_id),
            due_at INTEGER,
            notes TEXT,
            state TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            completed_at INTEGER,
            completed_by TEXT,
            response_id TEXT REFERENCES responses(response_id)
        );
        CREATE INDEX tasks_org ON tasks(org_id, task_id);
        CREATE INDEX tasks_assignee ON tasks(org_id, assignee_user_id, task_id);
        CREATE TABLE idempotency_keys (
            org_id TEXT NOT NULL,
            caller TEXT NOT NULL,
            method TEXT NOT NULL,
            route TEXT NOT NULL,
            target TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            request_digest TEXT NOT NULL,
            status INTEGER NOT NULL,
            location TEXT,
            body BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (org_id, caller, method, route, target, idempotency_key)
        );
        CREATE INDEX idempotency_age ON idempotency_keys(created_at);
        CREATE INDEX audit_feed ON audit(org_id, seq);
        CREATE INDEX responses_task ON responses(field_task_id);
        """),
        // A response row kept the request body as sent (~1.5 KB, beside the canonical answers)
        // only to recognise a byte-identical replay: its SHA-256 does that in 32 bytes, and the
        // row — written to the WAL on every commit — shrinks by almost half. Rows written before
        // keep their body (request_sha256 NULL). No query used responses_task; each insert paid for it.
        ("responses-body-sha256", """
        ALTER TABLE responses ADD COLUMN request_sha256 BLOB;
        DROP INDEX responses_task;
        """),
        // A replay answers the receipt of the acceptance; a resubmission may change the version
        // since, so the accepted one is kept beside it (NULL: unchanged). Rows resubmitted before
        // this step lost theirs: their replays answer the current version.
        ("responses-accepted-version", """
        ALTER TABLE responses ADD COLUMN accepted_survey_version_id TEXT;
        """),
        // Exports read one survey's responses in id order; without this they scanned every
        // response of the organization.
        ("responses-by-survey", """
        CREATE INDEX responses_survey ON responses(org_id, survey_id, response_id);
        """),
        // The web console: a user's email (stored lowercased, unique across the server) and
        // password (an Argon2id string), one-time invitations, and sessions — every secret kept
        // only as its SHA-256.
        ("console", """
        ALTER TABLE users ADD COLUMN email TEXT;
        ALTER TABLE users ADD COLUMN password_hash TEXT;
        CREATE UNIQUE INDEX users_email ON users(email) WHERE email IS NOT NULL;
        CREATE TABLE invitations (
            token_hash BLOB PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(user_id),
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            used_at INTEGER
        );
        CREATE INDEX invitations_user ON invitations(user_id);
        CREATE TABLE console_sessions (
            session_hash BLOB PRIMARY KEY,
            user_id TEXT REFERENCES users(user_id),
            token_id TEXT REFERENCES tokens(token_id),
            csrf_token TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            seen_at INTEGER NOT NULL
        );
        CREATE INDEX console_sessions_user ON console_sessions(user_id);
        """),
        // Webhooks. Their outbox is the audit log: every event (an acceptance, a review step, a
        // resubmission, a completed upload or task) already appends its audit entry in the
        // write's own transaction, in commit order, so a webhook keeps only a cursor into it.
        // A delivery row exists from an event's first attempt (or a manual retry) on. A response
        // about to change is kept as it was (a snapshot) while a webhook has not yet sent the
        // events it describes. `webhook_identity` makes event ids unique to this database.
        ("webhooks", """
        CREATE TABLE webhooks (
            webhook_id TEXT PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES orgs(org_id),
            url TEXT NOT NULL,
            events TEXT NOT NULL,
            description TEXT,
            enabled INTEGER NOT NULL,
            disabled_reason TEXT,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            previous_secret_until INTEGER,
            cursor INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX webhooks_org ON webhooks(org_id, webhook_id);
        CREATE TABLE webhook_deliveries (
            webhook_id TEXT NOT NULL,
            event_seq INTEGER NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at INTEGER,
            last_attempt_at INTEGER,
            last_status_code INTEGER,
            last_error TEXT,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (webhook_id, event_seq)
        ) WITHOUT ROWID;
        CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(webhook_id, event_seq) WHERE status = 'pending';
        CREATE TABLE webhook_snapshots (
            response_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            document BLOB NOT NULL,
            PRIMARY KEY (response_id, revision)
        ) WITHOUT ROWID;
        CREATE TABLE webhook_identity (id INTEGER PRIMARY KEY CHECK (id = 1), salt BLOB NOT NULL);
        INSERT INTO webhook_identity(id, salt) VALUES (1, randomblob(8));
        """),
        // PostgreSQL keeps files in the database, so that every process serves every file
        // (`PostgresFiles`); SQLite keeps them in the data dir and records this step with nothing to do.
        ("files-in-database", """
        -- postgres only
        CREATE TABLE blob_chunks (sha256 TEXT NOT NULL, n BIGINT NOT NULL, bytes BYTEA NOT NULL, PRIMARY KEY (sha256, n));
        ALTER TABLE blob_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
        CREATE TABLE partial_chunks (upload_id TEXT NOT NULL, start BIGINT NOT NULL, bytes BYTEA NOT NULL, PRIMARY KEY (upload_id, start));
        ALTER TABLE partial_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
        """),
        // Keyed requests in flight, counted across processes (`KeyedInFlight`); SQLite counts them
        // in memory.
        ("keyed-in-flight", """
        -- postgres only
        CREATE TABLE keyed_in_flight (claim_id TEXT PRIMARY KEY, caller TEXT NOT NULL, started_at BIGINT NOT NULL);
        CREATE INDEX keyed_in_flight_caller ON keyed_in_flight(caller, started_at);
        """),
        // Console sign-in attempts, counted across processes (`SignInAttempts`); SQLite counts
        // them in memory.
        ("sign-in-attempts", """
        -- postgres only
        CREATE TABLE sign_in_attempts (attempt_id TEXT NOT NULL, key TEXT NOT NULL, at BIGINT NOT NULL);
        CREATE INDEX sign_in_attempts_key ON sign_in_attempts(key, at);
        CREATE INDEX sign_in_attempts_id ON sign_in_attempts(attempt_id);
        """),
        // The key that seals export cursors (`ExportCursor`): a cursor shows a tenant nothing of
        // the audit sequence the others advance. Kept with the data, so it moves with a
        // migration or a backup and the cursors issued stay valid.
        ("export-cursor-key", """
        CREATE TABLE export_cursor_key (id INTEGER PRIMARY KEY CHECK (id = 1), key BLOB NOT NULL);
        INSERT INTO export_cursor_key(id, key) VALUES (1, randomblob(32));
        """),
    ]

    static func currentVersion(_ conn: any SQLConnection) throws -> Int {
        let exists = try conn.query(conn.dialect == .postgres
            ? "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'"
            : "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'")
        guard !exists.isEmpty else { return 0 }
        return Int(try conn.query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations").first?.int("version") ?? 0)
    }

    /// Each step in a transaction of its own. On PostgreSQL several processes may start at once:
    /// an advisory lock makes them take turns, and each looks at the version again inside it.
    static func run(on conn: any SQLConnection) throws {
        let postgres = conn.dialect == .postgres
        func inTurn<T>(_ body: () throws -> T) throws -> T {
            try conn.execute(postgres ? "BEGIN; SELECT pg_advisory_xact_lock(\(AdvisoryLock.migrations));" : "BEGIN IMMEDIATE")
            do {
                let result = try body()
                try conn.execute("COMMIT")
                return result
            } catch {
                try? conn.execute("ROLLBACK")
                throw error
            }
        }
        let current = try inTurn { () -> Int in
            try conn.execute(conn.dialect.ddl("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)
                """))
            return try currentVersion(conn)
        }
        if current > steps.count {
            throw StorageError.newerSchema("""
                the database has schema version \(current) but this surveyd knows only up to \(steps.count); \
                it was written by a newer surveyd. Refusing to start (nothing was changed): run the newer \
                surveyd or restore a backup made by this version.
                """)
        }
        for (i, step) in steps.enumerated() where i + 1 > current {
            try inTurn {
                guard try currentVersion(conn) < i + 1 else { return }  // another process applied it meanwhile
                if !step.sql.hasPrefix("-- postgres only") || postgres { try conn.execute(conn.dialect.ddl(step.sql)) }
                try conn.run("INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                             [.int(Int64(i + 1)), .text(step.name), .int(Int64(Date().timeIntervalSince1970))])
            }
        }
    }
}
