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

extension SQLValue {
    /// What kind of value this is, for an error that must not repeat the value itself.
    var kind: String {
        switch self {
        case .null: "NULL"
        case .int: "an integer"
        case .double: "a real"
        case .text: "text"
        case .blob: "a blob"
        }
    }
}
