import CSQLite
import SurveyDomain

/// Each response's summary facts (`SummaryFacts`), in `response_facts`: written with the
/// response in the transaction that stores or changes its answers or its review state, read by
/// the console's summary one narrow row per response.
extension GatedTransaction {
    /// The facts of a response being inserted (same transaction, sent with its next statement).
    func insertFacts(of r: ResponseRecord, _ facts: [UInt8]) throws {
        try context.conn.enqueue("""
            INSERT INTO response_facts(survey_id, response_id, org_id, survey_version_id, submitter, field_task_id, received_at, review_state, facts)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(r.surveyId), .text(r.responseId), .text(orgId), .text(r.surveyVersionId), .text(r.submitter),
                  .optional(r.fieldTaskId), .int(r.receivedAt), .text(r.reviewState.rawValue), .blob(facts)])
    }

    /// A stored response's state, and, when its answers changed, its version and facts.
    func updateFacts(of responseId: String, reviewState: ReviewState, answers: (surveyVersionId: String, facts: [UInt8])?) throws {
        let whereResponse = "survey_id = (SELECT survey_id FROM responses WHERE response_id = ?) AND response_id = ?"
        if let answers {
            try context.conn.run("UPDATE response_facts SET review_state = ?, survey_version_id = ?, facts = ? WHERE \(whereResponse)",
                                 [.text(reviewState.rawValue), .text(answers.surveyVersionId), .blob(answers.facts), .text(responseId), .text(responseId)])
        } else {
            try context.conn.run("UPDATE response_facts SET review_state = ? WHERE \(whereResponse)",
                                 [.text(reviewState.rawValue), .text(responseId), .text(responseId)])
        }
    }
}

/// One row of `eachSummaryFacts`: the bytes are valid during the call only.
public struct SummaryFactsRow {
    /// Its version as an index into the versions asked for (-1: another).
    public let version: Int
    public let submitter: UnsafeBufferPointer<UInt8>
    /// Days since 1970-01-01 UTC of the server's receipt.
    public let day: Int64
    public let facts: UnsafeBufferPointer<UInt8>
}

extension Snapshot {
    /// The responses `filter` selects, each as its version, submitter, day of receipt and facts,
    /// given to `body` one row at a time. On SQLite the bytes are SQLite's own (a million rows,
    /// nothing allocated a row).
    public func eachSummaryFacts(_ filter: ExportFilter, versions: [String], _ body: (SummaryFactsRow) throws -> Void) throws {
        let c = filter.condition
        let index = versions.isEmpty ? "-1" : "CASE survey_version_id " + versions.map { _ in "WHEN ? THEN ?" }.joined(separator: " ") + " ELSE -1 END"
        var args: [SQLValue] = []
        for (i, v) in versions.enumerated() { args += [.text(v), .int(Int64(i))] }
        let sql = "SELECT \(index) AS v, submitter, received_at / 86400000 AS day, facts FROM response_facts WHERE \(c.sql)"
        if let sqlite = conn as? Connection {
            let statement = try Statement(connection: sqlite, sql: sql)
            try statement.bind(args + c.args)
            defer { sqlite3_reset(statement.handle) }
            let h = statement.handle
            while true {
                let rc = sqlite3_step(h)
                if rc == SQLITE_DONE { return }
                guard rc == SQLITE_ROW else { throw sqlite.error(rc, sql: sql) }
                let submitter = sqlite3_column_text(h, 1), submitterBytes = Int(sqlite3_column_bytes(h, 1))
                let facts = sqlite3_column_blob(h, 3), factsBytes = Int(sqlite3_column_bytes(h, 3))
                try body(SummaryFactsRow(
                    version: Int(sqlite3_column_int64(h, 0)),
                    submitter: UnsafeBufferPointer(start: submitter, count: submitter == nil ? 0 : submitterBytes),
                    day: sqlite3_column_int64(h, 2),
                    facts: UnsafeBufferPointer(start: facts?.assumingMemoryBound(to: UInt8.self), count: facts == nil ? 0 : factsBytes)))
            }
        }
        let cursor = try rows(sql, args + c.args)
        while let row = try cursor.next() {
            let facts = try row.blob("facts"), submitter = Array(try row.string("submitter").utf8)
            let version = Int(try row.int("v")), day = try row.int("day")
            try facts.withUnsafeBufferPointer { f in
                try submitter.withUnsafeBufferPointer { try body(SummaryFactsRow(version: version, submitter: $0, day: day, facts: f)) }
            }
        }
    }
}

extension Database {
    /// How many responses have no facts yet (stored before facts were kept, or written into the
    /// database by another program): 0 on every start but the first after an upgrade.
    public func responsesWithoutFactsCount() throws -> Int {
        try read { db in
            Int(try db.conn.query("SELECT (SELECT COUNT(*) FROM responses) - (SELECT COUNT(*) FROM response_facts) AS n").first?.int("n") ?? 0)
        }
    }

    /// Up to `limit` responses without facts after `after` (a response id), in id order.
    public func responsesWithoutFacts(after: String, limit: Int) throws -> [ResponseRecord] {
        try read { db in
            try db.conn.query("""
                SELECT \(ResponseRecord.columns) FROM responses r WHERE response_id > ? AND NOT EXISTS (
                    SELECT 1 FROM response_facts f WHERE f.survey_id = r.survey_id AND f.response_id = r.response_id)
                ORDER BY response_id LIMIT ?
                """, [.text(after), .int(Int64(limit))]).map(ResponseRecord.init)
        }
    }

    /// Stores the facts of responses that had none: derived from what is stored, so neither
    /// gated nor audited. Each only if its response is still at the revision the facts were
    /// made from (an edit meanwhile leaves it for the next pass) and has none yet (another
    /// process may have stored them meanwhile).
    public func recordFacts(_ batch: [(response: ResponseRecord, facts: [UInt8])]) throws {
        try writer.submit { conn in
            for (r, facts) in batch {
                try conn.run("""
                    INSERT INTO response_facts(survey_id, response_id, org_id, survey_version_id, submitter, field_task_id, received_at, review_state, facts)
                    SELECT survey_id, response_id, org_id, survey_version_id, submitter, field_task_id, received_at, review_state, ?
                    FROM responses WHERE response_id = ? AND revision = ?
                    ON CONFLICT DO NOTHING
                    """, [.blob(facts), .text(r.responseId), .int(r.revision)])
            }
        }
    }
}
