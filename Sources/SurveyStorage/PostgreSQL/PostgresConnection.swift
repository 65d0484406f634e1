import CPostgres
import Foundation
import SurveyDomain

/// A failed libpq call: the SQLSTATE (`23505` unique violation, `40001` serialization failure,
/// `08…` connection trouble), the server's message and the SQL.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public let sqlState: String
    public let message: String
    public let sql: String?

    public var description: String { "PostgreSQL error \(sqlState): \(message)" + (sql.map { " [\($0)]" } ?? "") }
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The server cannot be reached or the connection broke: retryable, nothing was written.
    public var isConnectionLost: Bool { sqlState.hasPrefix("08") || sqlState.isEmpty || sqlState == "57P01" }
    /// The server undid the transaction to break a deadlock or a serialization conflict: running
    /// it again is safe.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// How the contract reports it: an unreachable or restarting database is a retryable 1040.
    public var apiError: ApiError {
        if isConnectionLost || sqlState.hasPrefix("53") || sqlState.hasPrefix("57") {
            return ApiError(.storageUnavailable, "The database is unavailable; nothing was written.", retryAfterSeconds: 1)
        }
        return ApiError(.internalError, "Storage error; nothing partial was written.")
    }
}

/// One libpq connection of the PostgreSQL engine, with the same shape as the SQLite
/// `Connection` — `execute`, `query` and `run` with `?` placeholders, results as
/// `Row`s of `SQLValue` — so that the repositories' SQL can run on both. `?` becomes `$n` here
/// (never inside a quoted literal); each distinct statement is prepared once per connection.
/// A connection is used by one thread at a time (libpq's rule); the engine keeps a pool of them.
///
/// Round trips: statements whose answer nobody reads at once (`enqueue`: a transaction's BEGIN, an
/// INSERT whose failure is all that matters) wait here and go with the next statement that is
/// awaited, in one libpq pipeline — one round trip for all of them. The end of a read transaction
/// is sent without waiting (`sendUnawaited`); its answer is read before the connection's next
/// statement. An error in a pipeline skips the statements after it, as if they had never been
/// sent, and is thrown where the pipeline is awaited.
public final class PostgresConnection: @unchecked Sendable {
    // @unchecked: a connection is used by one thread at a time; it is handed from thread to
    // thread (a pool, a test's second writer), never shared.
    let handle: OpaquePointer  // internal: COPY (PostgresCopy.swift) speaks to it directly
    private var prepared: [StatementKey: String] = [:]
    /// Statements held back until the next awaited one (`enqueue`, `prefetch`).
    private var queued: [Statement] = []
    /// Answers of `prefetch`ed statements not asked for yet, in this transaction.
    private var kept: [(statement: Statement, result: OpaquePointer)] = []
    /// Pipelines sent without waiting (`sendUnawaited`), by their number of statements; their
    /// answers are read before anything else is sent.
    private var unread: [Int] = []
    /// Rows the last `run` changed (PQcmdTuples), and every statement's so far.
    public private(set) var changes = 0
    public private(set) var totalChanges: Int64 = 0
    /// Statements the server has answered without an error on this connection. A caller that
    /// sees this unchanged when the connection turns out broken knows the server acted on nothing
    /// it sent since: a connection that died while idle in a pool (a restart of PostgreSQL, a cut
    /// network path) fails that way on its first statement.
    public private(set) var answered = 0
    /// Round trips made (pipelines count once; a statement's first PREPARE counts too): what the
    /// tests and the benchmark notes count.
    public private(set) var roundTrips = 0

    private struct Statement {
        let sql: String
        let args: [SQLValue]
        /// Results in binary format (bytea without hex).
        var binary = false
        /// Its answer is kept for a `query` of the same statement (`prefetch`).
        var keep = false

        func isSame(_ sql: String, _ args: [SQLValue], binary: Bool) -> Bool {
            self.binary == binary && self.sql == sql && self.args == args
        }
    }

    /// `url`: a libpq connection URI or key=value string (`postgresql:///db?host=/run/pg&port=5433`).
    public init(url: String) throws(PostgresError) {
        guard let h = PQconnectdb(url) else { throw PostgresError(sqlState: "", message: "out of memory", sql: nil) }
        guard PQstatus(h) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(h)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(h)
            throw PostgresError(sqlState: "08001", message: message, sql: nil)
        }
        handle = h
    }

    deinit {
        dropKept()
        discardOpening()
        PQfinish(handle)
    }

    /// Statements without parameters, several at once (a migration step). Statements still held
    /// back by `enqueue` go first; `sql` runs even when one of them failed (a ROLLBACK must), and
    /// the first error is thrown.
    public func execute(_ sql: String) throws(PostgresError) {
        var failure: PostgresError?
        do { try flush() } catch { failure = error }
        dropKept()
        readUnread()
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        roundTrips += 1
        do { try check(result, sql) } catch { failure = failure ?? error }
        if let failure { throw failure }
    }

    /// True while the connection is usable (false once the server went away).
    public var isOpen: Bool { PQstatus(handle) == CONNECTION_OK }

    public func query(_ sql: String, _ args: [SQLValue] = []) throws(PostgresError) -> [Row] {
        if let answer = try takeKept(sql, args, binary: false) { return answer }
        let result = try perform(Statement(sql: sql, args: args))
        defer { PQclear(result) }
        return rows(of: result)
    }

    /// `query` with results in binary format: a `bytea` arrives as its bytes, not as hex text
    /// twice its size to decode (a stored file's pieces).
    public func queryBinary(_ sql: String, _ args: [SQLValue] = []) throws(PostgresError) -> [Row] {
        if let answer = try takeKept(sql, args, binary: true) { return answer }
        let result = try perform(Statement(sql: sql, args: args, binary: true))
        defer { PQclear(result) }
        return rows(of: result)
    }

    public func run(_ sql: String, _ args: [SQLValue] = []) throws(PostgresError) {
        let result = try perform(Statement(sql: sql, args: args))
        PQclear(result)
    }

    /// Held back and sent with the next statement that is awaited (`query`, `run`, `flush`,
    /// `execute`), in one round trip. Its error, if any, is thrown there.
    public func enqueue(_ sql: String, _ args: [SQLValue] = []) {
        queued.append(Statement(sql: sql, args: args))
    }

    /// A read the caller will make later in this transaction, sent now with the next awaited
    /// statement: a `query` of the same statement (text, arguments) then takes its answer
    /// instead of asking again. Answers nobody asked for are dropped at the transaction's end.
    /// A read has no effect, so one made early that turns out not to be needed (the caller was
    /// refused before it) changes nothing.
    public func prefetch(_ sql: String, _ args: [SQLValue] = []) {
        queued.append(Statement(sql: sql, args: args, keep: true))
    }

    /// Set by `PostgresWriters` while a job runs in a transaction of its own: `finishJob` then
    /// commits it.
    var jobOwnsTransaction = false

    /// True while a transaction is open, or one is held back to be begun.
    var inTransaction: Bool { !queued.isEmpty || PQtransactionStatus(handle) != PQTRANS_IDLE }

    public func finishJob() throws(PostgresError) {
        guard jobOwnsTransaction else { return try flush() }
        enqueue("COMMIT")
        let statements = queued
        queued = []
        readUnread()
        let result = try pipeline(statements, then: nextOpening.map(captured) ?? [])
        PQclear(result)
    }

    /// Set by `PostgresWriters` while a job runs: holds back on this connection the opening of the
    /// job it will run next (its BEGIN, SAVEPOINT and prefetched reads), when one is waiting, and
    /// nothing otherwise. `finishJob` sends it right after the COMMIT, in the same round trip, as a
    /// pipeline segment of its own: the server begins the next transaction once this one has
    /// committed, and the next job finds its first reads answered (`adoptOpening`). Reads only,
    /// so an opening that is never used changes nothing.
    var nextOpening: ((PostgresConnection) -> Void)?
    /// The answers of the opening sent after the last COMMIT, and whether every statement of it
    /// succeeded (its transaction is then open on the server).
    private var opened: [(statement: Statement, result: OpaquePointer)] = []
    private(set) var holdsOpening = false

    /// Starts the next job on the opening sent with the last COMMIT: its prefetched answers become
    /// this transaction's. False (and nothing held) when there is none, or it failed: the job
    /// then opens its transaction the usual way.
    func adoptOpening() -> Bool {
        guard holdsOpening else {
            discardOpening()
            return false
        }
        kept += opened
        opened = []
        holdsOpening = false
        return true
    }

    /// Forgets an opening sent after a COMMIT (the job before failed, so it is rolled back with
    /// whatever that job leaves open).
    func discardOpening() {
        for o in opened { PQclear(o.result) }
        opened = []
        holdsOpening = false
    }

    /// The statements `open` would hold back, taken aside instead of queued.
    private func captured(_ open: (PostgresConnection) -> Void) -> [Statement] {
        let before = queued
        queued = []
        open(self)
        let statements = queued
        queued = before
        return statements
    }

    /// Sends what `enqueue` and `prefetch` held back and waits for it.
    public func flush() throws(PostgresError) {
        guard !queued.isEmpty else { return }
        let last = queued.removeLast()
        let result = try perform(last)
        if last.keep, let result { kept.append((last, result)) } else { PQclear(result) }
    }

    /// The answer of a `prefetch` of this very statement, if there is one (sent first if it is
    /// still held back).
    private func takeKept(_ sql: String, _ args: [SQLValue], binary: Bool) throws(PostgresError) -> [Row]? {
        guard !kept.isEmpty || queued.contains(where: \.keep) else { return nil }
        if queued.contains(where: { $0.keep && $0.isSame(sql, args, binary: binary) }) { try flush() }
        guard let i = kept.firstIndex(where: { $0.statement.isSame(sql, args, binary: binary) }) else { return nil }
        let result = kept.remove(at: i).result
        defer { PQclear(result) }
        return rows(of: result)
    }

    /// Forgets the answers of `prefetch`es nobody asked for: at a transaction's end, so that the
    /// next transaction on this connection never takes an answer read in this one.
    func dropKept() {
        for k in kept { PQclear(k.result) }
        kept = []
    }

    /// Sends `sql` (after what `enqueue` held back) and returns without its answer, which is read
    /// before the next statement: the COMMIT of a read-only transaction, whose answer changes
    /// nothing. The server runs it at once, so no transaction stays open meanwhile. A statement
    /// not yet prepared on this connection is sent the usual way, once.
    public func sendUnawaited(_ sql: String) {
        dropKept()
        let statements = queued.filter { !$0.keep } + [Statement(sql: sql, args: [])]
        queued = []
        readUnread()
        let names = statements.map { prepared[Self.key($0)] }
        guard names.allSatisfy({ $0 != nil }), PQenterPipelineMode(handle) == 1 else {
            _ = try? perform(statements)
            return
        }
        var sent = 0
        for (s, name) in zip(statements, names) {
            guard let name, send(s, name: name) else { break }
            sent += 1
        }
        _ = PQpipelineSync(handle)
        roundTrips += 1
        unread.append(sent)
    }

    /// `?` → `$1, $2, …`, outside single-quoted literals and double-quoted names.
    static func numberedPlaceholders(_ sql: String) -> String {
        var out = "", n = 0
        var quote: Character?
        for c in sql {
            if let q = quote {
                if c == q { quote = nil }
                out.append(c)
            } else if c == "'" || c == "\"" {
                quote = c
                out.append(c)
            } else if c == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// A parameter's type as the server is told it: integers, floats and blobs by their own
    /// type (so `SELECT ?` or `CASE … THEN ?` is an int8, never text), text and NULL left for
    /// the server to infer from where they stand.
    private static func typeOID(_ v: SQLValue) -> UInt32 {
        switch v {
        case .int: 20
        case .double: 701
        case .blob: 17
        case .text, .null: 0
        }
    }

    /// A statement is prepared once per connection and per parameter types (a NULL in one call
    /// and an integer in the next are different statements to the server).
    private struct StatementKey: Hashable {
        let sql: String
        /// The parameters' type OIDs, empty when every one is left to the server.
        let types: [UInt32]
    }

    private static func key(_ s: Statement) -> StatementKey {
        StatementKey(sql: s.sql, types: s.args.contains(where: { typeOID($0) != 0 }) ? s.args.map(typeOID) : [])
    }

    /// One statement, with whatever `enqueue` held back before it; the result of `s` (the caller
    /// clears it).
    private func perform(_ s: Statement) throws(PostgresError) -> OpaquePointer? {
        if queued.isEmpty { return try perform([s]) }
        let statements = queued + [s]
        queued = []
        return try perform(statements)
    }

    private func perform(_ statements: [Statement]) throws(PostgresError) -> OpaquePointer? {
        readUnread()
        guard statements.count > 1 else { return try performAlone(statements[0]) }
        return try pipeline(statements)
    }

    /// The usual way: PREPARE the first time, then execute and wait.
    private func performAlone(_ s: Statement) throws(PostgresError) -> OpaquePointer? {
        let key = Self.key(s)
        let name: String
        if let known = prepared[key] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let types = s.args.map(Self.typeOID)
            let result = types.withUnsafeBufferPointer { PQprepare(handle, name, Self.numberedPlaceholders(s.sql), Int32(types.count), $0.baseAddress) }
            defer { PQclear(result) }
            roundTrips += 1
            try check(result, s.sql)
            prepared[key] = name
        }
        let result = Self.withParameters(s.args) { n, values, lengths, formats in
            PQexecPrepared(handle, name, n, values, lengths, formats, s.binary ? 1 : 0)
        }
        roundTrips += 1
        do { try check(result, s.sql) } catch { PQclear(result); throw error }
        count(result)
        return result
    }

    /// Several statements in one pipeline: each PREPARE a statement needs, then every execution,
    /// one Sync, and the answers read in order. After an error the server skips the rest
    /// (PGRES_PIPELINE_ABORTED): the first error is thrown, and a statement whose PREPARE was
    /// skipped is not taken for prepared.
    /// `next`: a second segment sent after the first one's Sync, in the same round trip (the next
    /// job's opening, see `finishJob`); only statements already prepared go, else none of them.
    /// Its answers are held for `adoptOpening`, never thrown: it is read whatever the first
    /// segment's outcome, and after an error there it fails too (the transaction is aborted), which
    /// only means the next job opens on its own.
    private func pipeline(_ statements: [Statement], then next: [Statement] = []) throws(PostgresError) -> OpaquePointer? {
        guard PQenterPipelineMode(handle) == 1 else { throw sendFailure(statements[0].sql) }
        enum Step { case prepare(key: StatementKey, name: String), execute(Int) }
        var steps: [Step] = []
        var naming: [StatementKey: String] = [:]
        var unsent: String?
        for (i, s) in statements.enumerated() where unsent == nil {
            let key = Self.key(s)
            var name = prepared[key] ?? naming[key]
            if name == nil {
                let fresh = "s\(prepared.count + naming.count + 1)"
                let types = s.args.map(Self.typeOID)
                let ok = types.withUnsafeBufferPointer { PQsendPrepare(handle, fresh, Self.numberedPlaceholders(s.sql), Int32(types.count), $0.baseAddress) } == 1
                guard ok else { unsent = s.sql; break }
                steps.append(.prepare(key: key, name: fresh))
                naming[key] = fresh
                name = fresh
            }
            guard let name, send(s, name: name) else { unsent = s.sql; break }
            steps.append(.execute(i))
        }
        let synced = PQpipelineSync(handle) == 1
        roundTrips += 1
        var failure: PostgresError? = unsent.map(sendFailure) ?? (synced ? nil : sendFailure(statements[0].sql))
        discardOpening()
        let nextNames = next.map { prepared[Self.key($0)] }
        var nextSent = 0
        if failure == nil, !next.isEmpty, nextNames.allSatisfy({ $0 != nil }) {
            for (s, name) in zip(next, nextNames) {
                guard let name, send(s, name: name) else { break }
                nextSent += 1
            }
            if PQpipelineSync(handle) != 1 { failure = sendFailure(statements[0].sql) }
        }
        var last: OpaquePointer?
        for step in steps {
            guard let result = PQgetResult(handle) else {
                failure = failure ?? sendFailure(statements[0].sql)
                break
            }
            while let extra = PQgetResult(handle) { PQclear(extra) }  // each statement's answer ends with a NULL
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_ABORTED { PQclear(result); continue }
            switch step {
            case .prepare(let key, let name):
                do {
                    try check(result, key.sql)
                    prepared[key] = name
                } catch {
                    failure = failure ?? error
                }
                PQclear(result)
            case .execute(let i):
                do {
                    try check(result, statements[i].sql)
                    count(result)
                } catch {
                    failure = failure ?? error
                }
                if i == statements.count - 1 && failure == nil {
                    last = result
                } else if statements[i].keep && failure == nil {
                    kept.append((statements[i], result))
                } else {
                    PQclear(result)
                }
            }
        }
        // The Sync's own answer, then out of pipeline mode.
        if let sync = PQgetResult(handle) { PQclear(sync) }
        if nextSent > 0 { readOpening(next.prefix(nextSent), whole: nextSent == next.count) }
        _ = PQexitPipelineMode(handle)
        if let failure {
            PQclear(last)
            dropKept()
            throw failure
        }
        return last
    }

    /// The answers of an opening sent as a pipeline's second segment, and its Sync's.
    private func readOpening(_ statements: ArraySlice<Statement>, whole: Bool) {
        var ok = whole
        for s in statements {
            guard let result = PQgetResult(handle) else {
                ok = false
                break
            }
            while let extra = PQgetResult(handle) { PQclear(extra) }
            let status = PQresultStatus(result)
            if ok && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) && s.keep {
                opened.append((s, result))
            } else {
                if status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK { ok = false }
                PQclear(result)
            }
        }
        if let sync = PQgetResult(handle) { PQclear(sync) }
        holdsOpening = ok
        if !ok { discardOpening() }
    }

    /// Reads the answers of pipelines sent by `sendUnawaited`. Their errors are dropped (they
    /// ended read-only transactions), and they do not count as `answered`: they were answered
    /// before this use of the connection began.
    private func readUnread() {
        guard !unread.isEmpty else { return }
        for statements in unread {
            for _ in 0..<statements {
                guard let result = PQgetResult(handle) else { break }
                PQclear(result)
                while let extra = PQgetResult(handle) { PQclear(extra) }
            }
            if let sync = PQgetResult(handle) { PQclear(sync) }
        }
        unread = []
        _ = PQexitPipelineMode(handle)
    }

    /// Queues one execution of the prepared `name` in the pipeline.
    private func send(_ s: Statement, name: String) -> Bool {
        Self.withParameters(s.args) { n, values, lengths, formats in
            PQsendQueryPrepared(handle, name, n, values, lengths, formats, s.binary ? 1 : 0)
        } == 1
    }

    private func sendFailure(_ sql: String) -> PostgresError {
        let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(sqlState: isOpen ? "XX000" : "08006", message: message.isEmpty ? "the statement could not be sent" : message, sql: sql)
    }

    /// Rows changed, from the command tag of an INSERT, UPDATE or DELETE; other statements leave
    /// the count as it was, as in SQLite (a SELECT between an UPDATE and its check keeps its count).
    private func count(_ result: OpaquePointer?) {
        guard let tag = PQcmdStatus(result) else { return }
        let first = UInt8(bitPattern: tag[0])
        guard first == UInt8(ascii: "I") || first == UInt8(ascii: "U") || first == UInt8(ascii: "D") else { return }
        let command = String(cString: tag)
        guard command.hasPrefix("INSERT") || command.hasPrefix("UPDATE") || command.hasPrefix("DELETE") else { return }
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        totalChanges += Int64(changes)
    }

    /// The parameters as libpq takes them, from one buffer: text NUL-terminated, blobs as binary
    /// (no escaping), NULL as a nil pointer; the server infers each text's type.
    private static func withParameters<T>(_ args: [SQLValue],
                                          _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> T) -> T {
        if args.isEmpty { return body(0, nil, nil, nil) }
        var storage: [CChar] = []
        var offsets: [Int] = [], lengths: [Int32] = [], formats: [Int32] = []
        offsets.reserveCapacity(args.count); lengths.reserveCapacity(args.count); formats.reserveCapacity(args.count)
        func append(_ bytes: UnsafeRawBufferPointer) {
            storage.append(contentsOf: bytes.bindMemory(to: CChar.self))
        }
        func text(_ s: String) {
            offsets.append(storage.count)
            var s = s
            s.withUTF8 { append(UnsafeRawBufferPointer($0)) }
            storage.append(0)
            lengths.append(0)
            formats.append(0)
        }
        for a in args {
            switch a {
            case .null: offsets.append(-1); lengths.append(0); formats.append(0)
            case .int(let i): text(String(i))
            case .double(let d): text("\(d)")
            case .text(let s): text(storable(s))
            case .blob(let b):
                // An empty blob still needs an address: a nil one would be sent as NULL.
                offsets.append(storage.count)
                if b.isEmpty { storage.append(0) } else { b.withUnsafeBytes(append) }
                lengths.append(Int32(clamping: b.count))
                formats.append(1)
            }
        }
        return storage.withUnsafeBufferPointer { buffer in
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in offset < 0 ? nil : buffer.baseAddress.map { $0 + offset } }
            return pointers.withUnsafeBufferPointer { p in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in body(Int32(args.count), p.baseAddress, l.baseAddress, f.baseAddress) }
                }
            }
        }
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws(PostgresError) {
        let status = PQresultStatus(result)
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK else {
            answered += 1
            return
        }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(handle))
        throw PostgresError(sqlState: state, message: message.trimmingCharacters(in: .whitespacesAndNewlines), sql: sql)
    }

    /// Rows with their columns' names; values by column type: integers as `.int`, floats as
    /// `.double`, `bytea` as `.blob`, the rest as `.text` (`PQgetvalue` gives "" for NULL, so
    /// `PQgetisnull` decides). Text-format results, or binary ones (`queryBinary`).
    private func rows(of result: OpaquePointer?) -> [Row] {
        let n = PQntuples(result), columns = PQnfields(result)
        let types = (0..<columns).map { PQftype(result, $0) }
        let binary = (0..<columns).map { PQfformat(result, $0) == 1 }
        let names = Row.Columns((0..<columns).map { PQfname(result, $0).map { String(cString: $0) } ?? "" })
        var out: [Row] = []
        out.reserveCapacity(Int(n))
        for r in 0..<n {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columns))
            for c in 0..<columns {
                if PQgetisnull(result, r, c) == 1 { values.append(.null); continue }
                let length = Int(PQgetlength(result, r, c))
                guard let raw = PQgetvalue(result, r, c) else { values.append(.null); continue }
                let bytes = UnsafeRawBufferPointer(start: raw, count: max(0, length))
                if binary[Int(c)] {
                    values.append(Self.binaryValue(bytes, type: types[Int(c)]))
                    continue
                }
                if types[Int(c)] == 17 { values.append(.blob(Self.bytea(bytes))); continue }
                let text = String(cString: raw)
                switch types[Int(c)] {
                case 20, 21, 23: values.append(.int(Int64(text) ?? 0))  // int8, int2, int4
                case 1700:  // numeric: what SUM of integers gives
                    values.append(Int64(text).map(SQLValue.int) ?? .double(Double(text) ?? 0))
                case 700, 701: values.append(.double(Double(text) ?? 0))  // float4, float8
                case 16: values.append(.int(text == "t" ? 1 : 0))  // bool
                default: values.append(.text(Self.readable(text)))
                }
            }
            out.append(Row(columns: names, values: values))
        }
        return out
    }

    /// A value in PostgreSQL's binary format: integers and floats big-endian, text as UTF-8,
    /// `bytea` (and anything else) as its bytes.
    static func binaryValue(_ bytes: UnsafeRawBufferPointer, type: UInt32) -> SQLValue {
        func bigEndian(_ width: Int) -> Int64? {
            guard bytes.count == width else { return nil }
            var v: UInt64 = 0
            for b in bytes { v = v << 8 | UInt64(b) }
            // Sign-extend from `width` bytes.
            let shift = UInt64(64 - width * 8)
            return Int64(bitPattern: v << shift) >> Int64(shift)
        }
        switch type {
        case 20, 21, 23: return bigEndian(type == 20 ? 8 : type == 23 ? 4 : 2).map(SQLValue.int) ?? .null
        case 16: return .int(bytes.first == 1 ? 1 : 0)
        case 701: return bigEndian(8).map { .double(Double(bitPattern: UInt64(bitPattern: $0))) } ?? .null
        case 25, 1043: return .text(readable(String(decoding: bytes, as: UTF8.self)))
        default: return .blob(Array(bytes))
        }
    }

    /// PostgreSQL text cannot hold U+0000, which SQLite stores and the API reads back whole. So a
    /// NUL is kept as U+10FFFF followed by "0", and U+10FFFF itself (a noncharacter no text
    /// needs) as two of them; `readable` undoes it. Text without either goes as it is.
    static let escape: Character = "\u{10FFFF}"
    static func storable(_ s: String) -> String {
        guard contains(s, 0, or: 0xF4) else { return s }
        var out = ""
        for c in s {
            if c == "\u{0}" { out.append(escape); out.append("0") } else if c == escape { out.append(escape); out.append(escape) } else { out.append(c) }
        }
        return out
    }

    static func readable(_ s: String) -> String {
        guard contains(s, 0xF4), s.contains(escape) else { return s }
        var out = "", pending = false
        for c in s {
            if pending { out.append(c == "0" ? "\u{0}" : c); pending = false } else if c == escape { pending = true } else { out.append(c) }
        }
        return out
    }

    /// Whether `s`'s UTF-8 holds byte `a` or `b`: a loop over its bytes in place (every text a
    /// statement sends or reads passes here; `utf8.contains(where:)` steps an index per byte).
    static func contains(_ s: String, _ a: UInt8, or b: UInt8) -> Bool {
        var s = s
        return s.withUTF8 { bytes in
            for byte in bytes where byte == a || byte == b { return true }
            return false
        }
    }

    static func contains(_ s: String, _ byte: UInt8) -> Bool { contains(s, byte, or: byte) }

    /// `bytea` in its hex text form (`\x0a1b…`).
    static func bytea(_ text: String) -> [UInt8] {
        Array(text.utf8).withUnsafeBytes { bytea($0) }
    }

    static func bytea(_ u: UnsafeRawBufferPointer) -> [UInt8] {
        guard u.count >= 2, u[0] == UInt8(ascii: "\\"), u[1] == UInt8(ascii: "x") else { return Array(u) }
        func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c &- 48 : (c | 0x20) &- 87 }
        return [UInt8](unsafeUninitializedCapacity: (u.count - 2) / 2) { out, filled in
            var i = 2, o = 0
            while i + 1 < u.count {
                out[o] = nibble(u[i]) << 4 | nibble(u[i + 1])
                i += 2
                o += 1
            }
            filled = o
        }
    }
}

extension PostgresConnection: SQLConnection {
    var dialect: SQLDialect { .postgres }
}
