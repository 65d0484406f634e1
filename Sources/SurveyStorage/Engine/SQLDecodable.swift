import SurveyDomain

/// A Swift type a column's value reads as (`Row` subscripts and accessors). Each accepts exactly
/// its own kind of value: NULL only as an `Optional`, text never as a number.
public protocol SQLDecodable {
    static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Self
}

extension String: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> String {
        guard case .text(let s) = value else { throw .typeMismatch(column: column, expected: "text", found: value.kind) }
        return s
    }
}

extension Int64: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Int64 {
        guard case .int(let i) = value else { throw .typeMismatch(column: column, expected: "an integer", found: value.kind) }
        return i
    }
}

extension Int: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Int {
        Int(try Int64.decode(value, column: column))
    }
}

extension Double: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Double {
        guard case .double(let d) = value else { throw .typeMismatch(column: column, expected: "a real", found: value.kind) }
        return d
    }
}

/// Flags are integers (SQLite has no boolean; PostgreSQL's `bool` reads as 0 or 1).
extension Bool: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Bool {
        guard case .int(let i) = value else { throw .typeMismatch(column: column, expected: "an integer flag", found: value.kind) }
        return i != 0
    }
}

extension [UInt8]: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> [UInt8] {
        guard case .blob(let b) = value else { throw .typeMismatch(column: column, expected: "a blob", found: value.kind) }
        return b
    }
}

extension Optional: SQLDecodable where Wrapped: SQLDecodable {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Wrapped? {
        if case .null = value { return nil }
        return try Wrapped.decode(value, column: column)
    }
}

/// A stored name of an enum's case; a name that is no case is an error, never a default.
extension SQLDecodable where Self: RawRepresentable, RawValue == String {
    public static func decode(_ value: SQLValue, column: String) throws(RowDecodingError) -> Self {
        let raw = try String.decode(value, column: column)
        guard let decoded = Self(rawValue: raw) else { throw .unknownValue(column: column, value: raw, type: "\(Self.self)") }
        return decoded
    }
}

extension ReviewState: SQLDecodable {}
extension TaskState: SQLDecodable {}
