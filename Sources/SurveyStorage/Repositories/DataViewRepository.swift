import SurveyDomain

/// The console's views of a survey's data: a page of the table (keyset, newest first) and the
/// aggregate queries of its summary. The summary's queries read answers inside the database —
/// SQLite's JSON1 functions, PostgreSQL's `jsonb` operators — so a million responses are counted
/// where they lie, never brought into memory.
extension ReadContext {
    /// A page of the responses `filter` selects, newest first, before `before` (a responseId):
    /// keyset paging on the primary key, so the last page costs what the first does, and a
    /// response arriving meanwhile (a newer id) never moves a row from one page to another.
    public func dataRows(_ filter: ExportFilter, before: String?, limit: Int) throws -> [ExportedResponse] {
        var c = filter.condition
        if let before { c.sql += " AND response_id < ?"; c.args.append(.text(before)) }
        return try conn.query("SELECT \(ExportedResponse.columns) FROM responses WHERE \(c.sql) ORDER BY response_id DESC LIMIT ?",
                              c.args + [.int(Int64(limit))]).map(ExportedResponse.init)
    }
}

/// A number question's figures, as SQL computed them.
public struct NumberFigures: Sendable, Equatable {
    public let count: Int
    public let min: Double
    public let max: Double
    public let mean: Double
    public let median: Double
    /// Equal ranges of `binWidth` from `min` (the last one closed), each with its count.
    public let histogram: [Int]
    public let binWidth: Double
}

extension Snapshot {
    /// How the engine reads one answer out of the stored canonical JSON: `a` is the answers
    /// column of the summary's source (`jsonb` once per row on PostgreSQL). Every question id
    /// goes in as a bound argument, never into the SQL text.
    private struct Answers {
        let postgres: Bool
        /// The answers of the responses `filter` selects in `versions`, as `a`.
        func source(_ filter: ExportFilter, versions: [String]) -> (sql: String, args: [SQLValue]) {
            var c = filter.condition
            c.sql += " AND survey_version_id IN (" + versions.map { _ in "?" }.joined(separator: ",") + ")"
            c.args += versions.map { .text($0) }
            return ("(SELECT \(postgres ? "answers::jsonb" : "answers") AS a FROM responses WHERE \(c.sql)) src", c.args)
        }
        /// The answer as text (a string as itself; NULL when absent or JSON null).
        func text(_ id: String) -> (String, SQLValue) { postgres ? ("(a ->> ?)", .text(id)) : ("json_extract(a, ?)", path(id)) }
        /// Whether the answer is a JSON number.
        func isNumber(_ id: String) -> (String, SQLValue) {
            postgres ? ("jsonb_typeof(a -> ?) = 'number'", .text(id)) : ("json_type(a, ?) IN ('integer', 'real')", path(id))
        }
        /// The answer as a number (only where `isNumber`).
        func number(_ id: String) -> (String, SQLValue) { postgres ? ("(a ->> ?)::float8", .text(id)) : ("json_extract(a, ?)", path(id)) }
        /// SQLite's JSON path of a top-level key, quoted (ids may hold `.` and `-`).
        private func path(_ id: String) -> SQLValue { .text("$.\"" + id + "\"") }
    }

    private var answers: Answers { Answers(postgres: conn.dialect == .postgres) }

    /// How many responses `filter` selects in each survey version.
    public func countsByVersion(_ filter: ExportFilter) throws -> [String: Int] {
        let c = filter.condition
        var out: [String: Int] = [:]
        for r in try conn.query("SELECT survey_version_id, COUNT(*) AS n FROM responses WHERE \(c.sql) GROUP BY survey_version_id", c.args) {
            out[try r.string("survey_version_id")] = Int(try r.int("n"))
        }
        return out
    }

    /// How many responses `filter` selects per collector and per day of server time (days since
    /// 1970-01-01 UTC).
    public func countsBySubmitterAndDay(_ filter: ExportFilter) throws -> [(submitter: String, day: Int64, count: Int)] {
        let c = filter.condition
        return try conn.query("""
            SELECT submitter, received_at / 86400000 AS day, COUNT(*) AS n FROM responses WHERE \(c.sql)
            GROUP BY 1, 2 ORDER BY 2, 1
            """, c.args).map { (try $0.string("submitter"), try $0.int("day"), Int(try $0.int("n"))) }
    }

    /// A question's answers grouped by their text (`select_one`), with the count of each; the
    /// responses of `versions` without an answer are the group `nil`.
    public func answerCounts(_ filter: ExportFilter, questionId: String, versions: [String]) throws -> [(value: String?, count: Int)] {
        guard !versions.isEmpty else { return [] }
        let src = answers.source(filter, versions: versions), v = answers.text(questionId)
        return try conn.query("SELECT \(v.0) AS v, COUNT(*) AS n FROM \(src.sql) GROUP BY 1", [v.1] + src.args).map {
            (try $0.optionalString("v"), Int(try $0.int("n")))
        }
    }

    /// A `select_multiple`'s chosen values, each with the number of responses choosing it, and
    /// how many responses of `versions` answered it at all.
    public func choiceCounts(_ filter: ExportFilter, questionId: String, versions: [String]) throws -> (answered: Int, choices: [String: Int]) {
        guard !versions.isEmpty else { return (0, [:]) }
        let src = answers.source(filter, versions: versions), v = answers.text(questionId)
        let answered = try conn.query("SELECT COUNT(\(v.0)) AS n FROM \(src.sql)", [v.1] + src.args).first?.int("n") ?? 0
        let sql: String, args: [SQLValue]
        if conn.dialect == .postgres {
            sql = """
                SELECT e AS v, COUNT(*) AS n FROM \(src.sql)
                CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(a -> ?) = 'array' THEN a -> ? ELSE '[]'::jsonb END) e
                GROUP BY 1
                """
            args = src.args + [.text(questionId), .text(questionId)]
        } else {
            sql = "SELECT j.value AS v, COUNT(*) AS n FROM \(src.sql), json_each(src.a, ?) j WHERE j.type = 'text' GROUP BY 1"
            args = src.args + [v.1]
        }
        var choices: [String: Int] = [:]
        for r in try conn.query(sql, args) { choices[try r.string("v")] = Int(try r.int("n")) }
        return (Int(answered), choices)
    }

    /// How many responses of `versions` have an answer (any value but null).
    public func answeredCount(_ filter: ExportFilter, questionId: String, versions: [String]) throws -> Int {
        guard !versions.isEmpty else { return 0 }
        let src = answers.source(filter, versions: versions), v = answers.text(questionId)
        return Int(try conn.query("SELECT COUNT(\(v.0)) AS n FROM \(src.sql)", [v.1] + src.args).first?.int("n") ?? 0)
    }

    /// A date or date-time question's answers per day as written (`YYYY-MM-DD`, the first ten
    /// characters), oldest first.
    public func dayCounts(_ filter: ExportFilter, questionId: String, versions: [String]) throws -> [(day: String, count: Int)] {
        guard !versions.isEmpty else { return [] }
        let src = answers.source(filter, versions: versions), v = answers.text(questionId)
        return try conn.query("""
            SELECT substr(\(v.0), 1, 10) AS d, COUNT(*) AS n FROM \(src.sql) WHERE \(v.0) IS NOT NULL GROUP BY 1 ORDER BY 1
            """, [v.1] + src.args + [v.1]).map { (try $0.string("d"), Int(try $0.int("n"))) }
    }

    /// A number question's count, min, max, mean, median and a histogram of `bins` ranges, by
    /// aggregate queries (the median: the middle one or two of the values in order). Nil when
    /// no response of `versions` has a number for it. Integers spanning fewer than `bins` values
    /// get a range per value.
    public func numberFigures(_ filter: ExportFilter, questionId: String, versions: [String], integers: Bool, bins: Int = 10) throws -> NumberFigures? {
        guard !versions.isEmpty else { return nil }
        let src = answers.source(filter, versions: versions), x = answers.number(questionId), isNumber = answers.isNumber(questionId)
        let values = "(SELECT \(x.0) AS x FROM \(src.sql) WHERE \(isNumber.0)) vals"
        let valueArgs = [x.1] + src.args + [isNumber.1]
        guard let r = try conn.query("SELECT COUNT(*) AS n, MIN(x) AS lo, MAX(x) AS hi, AVG(x) AS mean FROM \(values)", valueArgs).first else { return nil }
        let count = Int(try r.int("n"))
        guard count > 0 else { return nil }
        let lo = try Self.double(r.value("lo")), hi = try Self.double(r.value("hi")), mean = try Self.double(r.value("mean"))
        let middle = try conn.query("SELECT x FROM \(values) ORDER BY x LIMIT ? OFFSET ?",
                                    valueArgs + [.int(count % 2 == 0 ? 2 : 1), .int(Int64((count - 1) / 2))]).map { try Self.double($0.value("x")) }
        let median = middle.isEmpty ? lo : middle.reduce(0, +) / Double(middle.count)
        let perValue = integers && hi - lo < Double(bins)
        let binCount = perValue ? Int(hi - lo) + 1 : bins
        let width = perValue ? 1 : (hi - lo) / Double(bins)
        var histogram = Array(repeating: 0, count: binCount)
        if hi > lo {
            let bucket = conn.dialect == .postgres ? "floor((x - ?) / ?)::bigint" : "CAST((x - ?) / ? AS INTEGER)"
            for b in try conn.query("SELECT \(bucket) AS b, COUNT(*) AS n FROM \(values) GROUP BY 1",
                                    [.double(lo), .double(width)] + valueArgs) {
                let i = Int(try b.int("b"))
                histogram[Swift.min(Swift.max(i, 0), binCount - 1)] += Int(try b.int("n"))
            }
        } else {
            histogram = [count]
        }
        return NumberFigures(count: count, min: lo, max: hi, mean: mean, median: median, histogram: histogram, binWidth: hi > lo ? width : 0)
    }

    private static func double(_ v: SQLValue) throws -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .text(let t): if let d = Double(t) { return d }
        default: break
        }
        throw ApiError(.internalError, "A summary figure was not a number.")
    }

    /// The answers of the responses of `versions`, one at a time with their version (for figures
    /// SQL cannot compute: whether a question was relevant, which takes the form's logic).
    public func answerRows(_ filter: ExportFilter, versions: [String]) throws -> () throws -> (version: String, answers: String)? {
        guard !versions.isEmpty else { return { nil } }
        var c = filter.condition
        c.sql += " AND survey_version_id IN (" + versions.map { _ in "?" }.joined(separator: ",") + ")"
        c.args += versions.map { .text($0) }
        let cursor = try rows("SELECT survey_version_id, answers FROM responses WHERE \(c.sql)", c.args)
        return { try cursor.next().map { (try $0.string("survey_version_id"), try $0.string("answers")) } }
    }
}
