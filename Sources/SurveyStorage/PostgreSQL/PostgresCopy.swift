import CPostgres
import Foundation

extension PostgresConnection {
    /// `COPY table(columns) FROM STDIN` in text format, inside whatever transaction is open:
    /// `fill` writes the rows into the stream, which sends them a megabyte at a time (no round
    /// trip per row). Returns the rows the server took. If `fill` throws, the COPY is abandoned
    /// (nothing of it stays) and the error goes on; the transaction is then failed and must be
    /// rolled back.
    func copyIn(table: String, columns: [String], _ fill: (PostgresCopyStream) throws -> Void) throws -> Int {
        let sql = "COPY \(table)(\(columns.joined(separator: ", "))) FROM STDIN"
        let start = PQexec(handle, sql)
        let status = PQresultStatus(start)
        let failure = status == PGRES_COPY_IN ? nil : copyError(start, sql)
        PQclear(start)
        if let failure { throw failure }
        let stream = PostgresCopyStream(connection: self, sql: sql)
        do {
            try fill(stream)
            try stream.flush()
        } catch {
            _ = PQputCopyEnd(handle, "the rows could not be read: \(error)")
            drainResults()
            throw error
        }
        guard PQputCopyEnd(handle, nil) == 1 else {
            let e = PostgresError(sqlState: "08006", message: String(cString: PQerrorMessage(handle)), sql: sql)
            drainResults()
            throw e
        }
        var firstError: PostgresError?
        var copied = 0
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if firstError == nil {
                firstError = copyError(result, sql)
            }
            PQclear(result)
        }
        if let firstError { throw firstError }
        return copied
    }

    /// Sends bytes of the COPY under way.
    fileprivate func putCopyData(_ bytes: UnsafeRawBufferPointer, sql: String) throws {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let sent = PQputCopyData(handle, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
        guard sent == 1 else {
            throw PostgresError(sqlState: "08006", message: String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines), sql: sql)
        }
    }

    private func drainResults() {
        while let result = PQgetResult(handle) { PQclear(result) }
    }

    private func copyError(_ result: OpaquePointer?, _ sql: String) -> PostgresError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(handle))
        return PostgresError(sqlState: state, message: message.trimmingCharacters(in: .whitespacesAndNewlines), sql: sql)
    }
}

/// The rows of one `COPY … FROM STDIN`, in PostgreSQL's text format: fields separated by a tab,
/// rows ended by a newline, `\N` for NULL, and a backslash, tab, newline or carriage return in a
/// value escaped with a backslash. `bytea` goes in its hex form (`\x0a1b…`, its backslash doubled).
/// Text keeps `PostgresConnection.storable`'s form of U+0000, as every other write does.
final class PostgresCopyStream {
    private unowned let connection: PostgresConnection
    private let sql: String
    private var buffer: [UInt8] = []
    private var fieldsInRow = 0
    static let flushAt = 1 << 20

    fileprivate init(connection: PostgresConnection, sql: String) {
        self.connection = connection
        self.sql = sql
        buffer.reserveCapacity(Self.flushAt + (64 << 10))
    }

    private func separate() {
        if fieldsInRow > 0 { buffer.append(0x09) }
        fieldsInRow += 1
    }

    func null() {
        separate()
        buffer.append(0x5C)  // \N
        buffer.append(0x4E)
    }

    func integer(_ value: Int64) {
        separate()
        if value < 0 { buffer.append(0x2D) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.append(d[i]) }
        }
    }

    func double(_ value: Double) {
        separate()
        let text = value.isNaN ? "NaN" : value.isInfinite ? (value < 0 ? "-Infinity" : "Infinity") : "\(value)"
        buffer.append(contentsOf: text.utf8)
    }

    /// Text as SQLite holds it (UTF-8 bytes, possibly invalid or holding NUL).
    func text(_ bytes: UnsafeBufferPointer<UInt8>) {
        separate()
        let mark = buffer.count
        if !appendEscaped(bytes, plainOnly: true) {
            // Not plain ASCII: repaired as every read of SQLite text is, NUL kept in storable form.
            buffer.removeSubrange(mark...)
            var s = PostgresConnection.storable(String(decoding: bytes, as: UTF8.self))
            s.withUTF8 { _ = appendEscaped($0, plainOnly: false) }
        }
    }

    func text(_ string: String) {
        var s = PostgresConnection.storable(string)
        separate()
        s.withUTF8 { _ = appendEscaped($0, plainOnly: false) }
    }

    func bytea(_ bytes: UnsafeRawBufferPointer) {
        separate()
        buffer.append(0x5C)  // "\\x": the bytea hex prefix, its backslash escaped for COPY
        buffer.append(0x5C)
        buffer.append(0x78)
        let hex: StaticString = "0123456789abcdef"
        hex.withUTF8Buffer { digits in
            for b in bytes {
                buffer.append(digits[Int(b >> 4)])
                buffer.append(digits[Int(b & 0x0F)])
            }
        }
    }

    /// Ends the row; sends the buffer once it holds a megabyte.
    func endRow() throws {
        buffer.append(0x0A)
        fieldsInRow = 0
        if buffer.count >= Self.flushAt { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { try connection.putCopyData($0, sql: sql) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Appends `bytes` with COPY's escapes, a run of ordinary bytes at a time. With `plainOnly`,
    /// gives up (false) at the first byte that is not ASCII or is NUL.
    private func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, plainOnly: Bool) -> Bool {
        var i = 0, run = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            let escaped: UInt8
            switch b {
            case 0x5C: escaped = 0x5C  // backslash
            case 0x0A: escaped = 0x6E  // n
            case 0x0D: escaped = 0x72  // r
            case 0x09: escaped = 0x74  // t
            case 0x00, 0x80...: if plainOnly { return false }
                i += 1
                continue
            default:
                i += 1
                continue
            }
            if i > run { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i])) }
            buffer.append(0x5C)
            buffer.append(escaped)
            i += 1
            run = i
        }
        if n > run { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<n])) }
        return true
    }
}
