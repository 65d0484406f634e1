/// A value bound to or read from a statement.
public enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }
    public static func optional(_ s: String?) -> SQLValue { s.map { .text($0) } ?? .null }
    public static func optional(_ i: Int64?) -> SQLValue { i.map { .int($0) } ?? .null }
    public static func bool(_ b: Bool) -> SQLValue { .int(b ? 1 : 0) }
}

/// One result row.
public struct Row: Sendable {
    public let values: [SQLValue]
    public func string(_ i: Int) -> String { if case .text(let s) = values[i] { return s }; return "" }
    public func optionalString(_ i: Int) -> String? { if case .text(let s) = values[i] { return s }; return nil }
    public func int(_ i: Int) -> Int64 { if case .int(let v) = values[i] { return v }; return 0 }
    public func optionalInt(_ i: Int) -> Int64? { if case .int(let v) = values[i] { return v }; return nil }
    public func bool(_ i: Int) -> Bool { int(i) != 0 }
    public func optionalBlob(_ i: Int) -> [UInt8]? { if case .blob(let b) = values[i] { return b }; return nil }
    public func blob(_ i: Int) -> [UInt8] {
        switch values[i] { case .blob(let b): b; case .text(let s): Array(s.utf8); default: [] }
    }
}
