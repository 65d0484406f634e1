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
public final class PostgresConnection: @unchecked Sendable {
    // @unchecked: a connection is used by one thread at a time; it is handed from thread to
    // thread (a pool, a test's second writer), never shared.
    let handle: OpaquePointer  // internal: COPY (PostgresCopy.swift) speaks to it directly
    private var prepared: [String: String] = [:]
    /// Rows the last `run` changed (PQcmdTuples), and every statement's so far.
    public private(set) var changes = 0
    public private(set) var totalChanges: Int64 = 0
    /// Statements the server has answered without an error on this connection. A caller that
    /// sees this unchanged when the connection turns out broken knows the server acted on nothing
    /// it sent since: a connection that died while idle in a pool (a restart of PostgreSQL, a cut
    /// network path) fails that way on its first statement.
    public private(set) var answered = 0

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

    deinit { PQfinish(handle) }

    /// Statements without parameters, several at once (a migration step).
    public func execute(_ sql: String) throws(PostgresError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// True while the connection is usable (false once the server went away).
    public var isOpen: Bool { PQstatus(handle) == CONNECTION_OK }

    public func query(_ sql: String, _ args: [SQLValue] = []) throws(PostgresError) -> [Row] {
        let result = try perform(sql, args)
        defer { PQclear(result) }
        return rows(of: result)
    }

    public func run(_ sql: String, _ args: [SQLValue] = []) throws(PostgresError) {
        let result = try perform(sql, args)
        PQclear(result)
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

    private func perform(_ sql: String, _ args: [SQLValue]) throws(PostgresError) -> OpaquePointer? {
        // A statement is prepared once per connection and per parameter types (a NULL in one
        // call and an integer in the next are different statements to the server).
        let types = args.map(Self.typeOID)
        let key = types.contains(where: { $0 != 0 }) ? sql + "\u{0}" + types.map(String.init).joined(separator: ",") : sql
        let name: String
        if let known = prepared[key] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let result = types.withUnsafeBufferPointer { PQprepare(handle, name, Self.numberedPlaceholders(sql), Int32(types.count), $0.baseAddress) }
            defer { PQclear(result) }
            try check(result, sql)
            prepared[key] = name
        }
        // Text parameters, but blobs as binary (no escaping); the server infers each type.
        var buffers: [[CChar]?] = []
        var lengths: [Int32] = [], formats: [Int32] = []
        for a in args {
            switch a {
            case .null: buffers.append(nil); lengths.append(0); formats.append(0)
            case .int(let i): buffers.append(Array(String(i).utf8CString)); lengths.append(0); formats.append(0)
            case .double(let d): buffers.append(Array("\(d)".utf8CString)); lengths.append(0); formats.append(0)
            case .text(let s): buffers.append(Array(Self.storable(s).utf8CString)); lengths.append(0); formats.append(0)
            case .blob(let b): buffers.append(b.map { CChar(bitPattern: $0) }); lengths.append(Int32(b.count)); formats.append(1)
            }
        }
        let result = withPointers(buffers) { values in
            PQexecPrepared(handle, name, Int32(args.count), values, lengths, formats, 0)
        }
        do { try check(result, sql) } catch { PQclear(result); throw error }
        let command = String(cString: PQcmdStatus(result))
        if command.hasPrefix("INSERT") || command.hasPrefix("UPDATE") || command.hasPrefix("DELETE") {
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            totalChanges += Int64(changes)
        }  // else unchanged, as in SQLite: a SELECT between an UPDATE and its check keeps its count
        return result
    }

    private func withPointers<T>(_ buffers: [[CChar]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        func go(_ i: Int, _ acc: [UnsafePointer<CChar>?]) -> T {
            if i == buffers.count { return body(acc) }
            guard let b = buffers[i] else { return go(i + 1, acc + [nil]) }
            // An empty blob still needs an address: a nil one would be sent as NULL.
            if b.isEmpty { return [CChar(0)].withUnsafeBufferPointer { go(i + 1, acc + [$0.baseAddress]) } }
            return b.withUnsafeBufferPointer { go(i + 1, acc + [$0.baseAddress]) }
        }
        return go(0, [])
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

    /// Rows with their columns' names; values by column type: integers as `.int`, floats as `.double`, `bytea` as `.blob`, the rest
    /// as `.text` (text-format results; `PQgetvalue` gives "" for NULL, so `PQgetisnull` decides).
    private func rows(of result: OpaquePointer?) -> [Row] {
        let n = PQntuples(result), columns = PQnfields(result)
        let types = (0..<columns).map { PQftype(result, $0) }
        let names = Row.Columns((0..<columns).map { PQfname(result, $0).map { String(cString: $0) } ?? "" })
        var out: [Row] = []
        out.reserveCapacity(Int(n))
        for r in 0..<n {
            var values: [SQLValue] = []
            for c in 0..<columns {
                if PQgetisnull(result, r, c) == 1 { values.append(.null); continue }
                let text = String(cString: PQgetvalue(result, r, c))
                switch types[Int(c)] {
                case 20, 21, 23: values.append(.int(Int64(text) ?? 0))  // int8, int2, int4
                case 1700:  // numeric: what SUM of integers gives
                    values.append(Int64(text).map(SQLValue.int) ?? .double(Double(text) ?? 0))
                case 700, 701: values.append(.double(Double(text) ?? 0))  // float4, float8
                case 16: values.append(.int(text == "t" ? 1 : 0))  // bool
                case 17: values.append(.blob(Self.bytea(text)))
                default: values.append(.text(Self.readable(text)))
                }
            }
            out.append(Row(columns: names, values: values))
        }
        return out
    }

    /// PostgreSQL text cannot hold U+0000, which SQLite stores and the API reads back whole. So a
    /// NUL is kept as U+10FFFF followed by "0", and U+10FFFF itself (a noncharacter no text
    /// needs) as two of them; `readable` undoes it. Text without either goes as it is.
    static let escape: Character = "\u{10FFFF}"
    static func storable(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0 || $0 == 0xF4 }) else { return s }
        var out = ""
        for c in s {
            if c == "\u{0}" { out.append(escape); out.append("0") } else if c == escape { out.append(escape); out.append(escape) } else { out.append(c) }
        }
        return out
    }

    static func readable(_ s: String) -> String {
        guard s.utf8.contains(0xF4), s.contains(escape) else { return s }
        var out = "", pending = false
        for c in s {
            if pending { out.append(c == "0" ? "\u{0}" : c); pending = false } else if c == escape { pending = true } else { out.append(c) }
        }
        return out
    }

    /// `bytea` in its hex text form (`\x0a1b…`).
    static func bytea(_ text: String) -> [UInt8] {
        let u = Array(text.utf8)
        guard u.count >= 2, u[0] == UInt8(ascii: "\\"), u[1] == UInt8(ascii: "x") else { return u }
        func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
        var out: [UInt8] = []
        out.reserveCapacity((u.count - 2) / 2)
        var i = 2
        while i + 1 < u.count { out.append(nibble(u[i]) << 4 | nibble(u[i + 1])); i += 2 }
        return out
    }
}

extension PostgresConnection: SQLConnection {
    var dialect: SQLDialect { .postgres }
}
