import SurveyDomain

/// `$filter`: a small, bounded parser for what this server evaluates, and nothing else.
///
///     expr    := and ("or" and)*
///     and     := unary ("and" unary)*
///     unary   := "not" unary | compare
///     compare := operand (("eq" | "ne" | "gt" | "ge" | "lt" | "le") operand)?
///     operand := "(" expr ")" | literal | path
///     literal := 'text' ('' is a quote) | number | true | false | null | 2026-01-31 | 2026-01-31T08:00:00Z
///     path    := name ("/" name)*   (a primitive property: `__system/submissionDate`, `size`, `group/q`)
///
/// Functions (`contains(…)`), arithmetic (`add`, `sub`…), `has`, `in`, lambdas, parameter
/// aliases, typed literals (`duration'…'`) and comparisons of geography are 501; a property
/// that does not exist or a comparison of values of different kinds is 400. At most
/// `maxLength` characters and `maxDepth` levels of nesting.
public struct ODataFilter: Sendable {
    public static let maxLength = 4096
    public static let maxDepth = 32
    public static let maxTerms = 256

    /// A typed value a comparison reads.
    enum Value: Sendable, Equatable {
        case null
        case string(String)
        case number(Double)
        case bool(Bool)
        case date(String)
        /// Milliseconds since 1970 (an `Edm.DateTimeOffset`).
        case time(Int64)
    }

    enum Operand: Sendable {
        case literal(Value)
        case path([String], ODataModel.EdmType)
    }

    enum Comparison: String, Sendable { case eq, ne, gt, ge, lt, le }

    indirect enum Expr: Sendable {
        case and(Expr, Expr)
        case or(Expr, Expr)
        case not(Expr)
        case compare(Comparison, Operand, Operand)
        case constant(Bool)
    }

    let root: Expr

    /// Parses `text` for `table` of `model` (400 or 501 on what it cannot evaluate).
    public init(_ text: String, model: ODataModel, table: Int) throws(ODataError) {
        try self.init(text) { model.resolve($0, in: table) }
    }

    /// Parses `text` for a table whose properties `resolve` types (an entity list's `Entities`).
    public init(_ text: String, resolve: @escaping @Sendable ([String]) -> ODataModel.Resolved?) throws(ODataError) {
        guard text.utf8.count <= Self.maxLength else {
            throw .unsupported("$filter is longer than this server evaluates (\(Self.maxLength) characters).")
        }
        var parser = Parser(tokens: try Lexer.tokens(text), resolve: resolve)
        root = try parser.parseAll()
    }

    /// Whether `row` (an OData row as this server writes it) matches.
    public func matches(_ row: JSONValue) -> Bool { Self.evaluate(root, row) }

    static func evaluate(_ e: Expr, _ row: JSONValue) -> Bool {
        switch e {
        case .and(let a, let b): return evaluate(a, row) && evaluate(b, row)
        case .or(let a, let b): return evaluate(a, row) || evaluate(b, row)
        case .not(let a): return !evaluate(a, row)
        case .constant(let b): return b
        case .compare(let op, let l, let r): return compare(op, value(l, row), value(r, row))
        }
    }

    static func value(_ o: Operand, _ row: JSONValue) -> Value {
        switch o {
        case .literal(let v): return v
        case .path(let path, let type):
            var at: JSONValue? = row
            for p in path { at = at?[p] }
            return typed(at, type)
        }
    }

    /// A row's JSON value read as `type` says.
    static func typed(_ v: JSONValue?, _ type: ODataModel.EdmType) -> Value {
        guard let v, !v.isNull else { return .null }
        switch type {
        case .int64, .decimal: return v.doubleValue.map(Value.number) ?? .null
        case .string: return v.stringValue.map(Value.string) ?? .null
        case .date: return v.stringValue.map(Value.date) ?? .null
        case .dateTimeOffset: return v.stringValue.flatMap(Timestamp.parse).map(Value.time) ?? .null
        case .point: return .null  // refused when parsed
        }
    }

    /// OData's rules: `null eq null` is true, any other comparison with null false (`ne`: true).
    static func compare(_ op: Comparison, _ a: Value, _ b: Value) -> Bool {
        if a == .null || b == .null {
            switch op {
            case .eq: return a == b
            case .ne: return a != b
            default: return false
            }
        }
        let order: Int
        switch (a, b) {
        case (.number(let x), .number(let y)): order = x < y ? -1 : (x > y ? 1 : 0)
        case (.string(let x), .string(let y)), (.date(let x), .date(let y)): order = x < y ? -1 : (x > y ? 1 : 0)
        case (.time(let x), .time(let y)): order = x < y ? -1 : (x > y ? 1 : 0)
        case (.time, .date(let d)): return compare(op, a, .time(Timestamp.parse(d + "T00:00:00Z") ?? 0))
        case (.date(let d), .time): return compare(op, .time(Timestamp.parse(d + "T00:00:00Z") ?? 0), b)
        case (.bool(let x), .bool(let y)): order = x == y ? 0 : (!x ? -1 : 1)
        default: return op == .ne  // kinds the parser lets meet only when one side is a literal null
        }
        switch op {
        case .eq: return order == 0
        case .ne: return order != 0
        case .gt: return order > 0
        case .ge: return order >= 0
        case .lt: return order < 0
        case .le: return order <= 0
        }
    }

    // MARK: - Lexing

    enum Token: Sendable, Equatable {
        case open, close, comma
        case name(String)  // a path segment or a keyword
        case slash
        case literal(Value, kind: LiteralKind)
        case other(String)
    }

    enum LiteralKind: Sendable, Equatable { case string, number, bool, null, date, dateTime }

    enum Lexer {
        static func tokens(_ text: String) throws(ODataError) -> [Token] {
            let s = Array(text.unicodeScalars)
            var i = 0, out: [Token] = []
            func isDigit(_ c: Unicode.Scalar) -> Bool { c.value >= 48 && c.value <= 57 }
            func isNameStart(_ c: Unicode.Scalar) -> Bool { (c.properties.isAlphabetic && c.isASCII) || c == "_" }
            func isName(_ c: Unicode.Scalar) -> Bool { isNameStart(c) || isDigit(c) || c == "-" }
            while i < s.count {
                guard out.count <= ODataFilter.maxTerms * 4 else {
                    throw .unsupported("$filter has more terms than this server evaluates.")
                }
                let c = s[i]
                switch c {
                case " ", "\t", "\n", "\r": i += 1
                case "(": out.append(.open); i += 1
                case ")": out.append(.close); i += 1
                case ",": out.append(.comma); i += 1
                case "/": out.append(.slash); i += 1
                case "'":
                    var v = String.UnicodeScalarView()
                    i += 1
                    var closed = false
                    while i < s.count {
                        if s[i] == "'" {
                            if i + 1 < s.count && s[i + 1] == "'" { v.append("'"); i += 2; continue }
                            i += 1; closed = true; break
                        }
                        v.append(s[i]); i += 1
                    }
                    guard closed else { throw .bad("$filter has a text literal without its closing quote.") }
                    out.append(.literal(.string(String(v)), kind: .string))
                default:
                    if isDigit(c) || (c == "-" && i + 1 < s.count && isDigit(s[i + 1])) {
                        var j = i + 1
                        while j < s.count, isDigit(s[j]) || ".:+-TZtzEe".unicodeScalars.contains(s[j]) { j += 1 }
                        let word = String(String.UnicodeScalarView(s[i..<j]))
                        out.append(try literal(word))
                        i = j
                    } else if isNameStart(c) {
                        var j = i + 1
                        while j < s.count, isName(s[j]) || s[j] == "." { j += 1 }
                        let word = String(String.UnicodeScalarView(s[i..<j]))
                        i = j
                        if i < s.count, s[i] == "'" { throw .unsupported("$filter: typed literals (\(word)'…') are not supported.") }
                        switch word {
                        case "true": out.append(.literal(.bool(true), kind: .bool))
                        case "false": out.append(.literal(.bool(false), kind: .bool))
                        case "null": out.append(.literal(.null, kind: .null))
                        default: out.append(.name(word))
                        }
                    } else {
                        out.append(.other(String(c)))
                        i += 1
                    }
                }
            }
            return out
        }

        /// A number, a date (`2026-01-31`) or a date-time with `Z` or an offset.
        static func literal(_ word: String) throws(ODataError) -> Token {
            let b = Array(word.utf8)
            if b.count >= 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[0...3].allSatisfy({ $0 >= 48 && $0 <= 57 }) {
                if b.count == 10 {
                    guard Timestamp.parse(word + "T00:00:00Z") != nil else { throw .bad("$filter: \(word) is not a date.") }
                    return .literal(.date(word), kind: .date)
                }
                guard let t = Timestamp.parse(word) else {
                    throw .bad("$filter: \(word) is not a date-time (RFC 3339, with Z or an offset; send + as %2B).")
                }
                return .literal(.time(t), kind: .dateTime)
            }
            guard word.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
                  let d = Double(word), d.isFinite else {
                throw .bad("$filter: \(word) is not a number.")
            }
            return .literal(.number(d), kind: .number)
        }
    }

    // MARK: - Parsing

    struct Parser {
        let tokens: [Token]
        /// A property path's type, nil when the table has no such property.
        let resolve: ([String]) -> ODataModel.Resolved?
        var at = 0
        var depth = 0
        var terms = 0

        init(tokens: [Token], resolve: @escaping ([String]) -> ODataModel.Resolved?) {
            self.tokens = tokens; self.resolve = resolve
        }

        var peek: Token? { at < tokens.count ? tokens[at] : nil }

        mutating func parseAll() throws(ODataError) -> Expr {
            guard !tokens.isEmpty else { throw .bad("$filter is empty.") }
            let e = try parseOr()
            if let extra = peek { throw Self.unexpected(extra) }
            return e
        }

        static func unexpected(_ t: Token) -> ODataError {
            switch t {
            case .name(let n) where ["add", "sub", "mul", "div", "divby", "mod", "has", "in"].contains(n):
                return .unsupported("$filter: the operator \(n) is not supported (eq ne gt ge lt le and or not are).")
            case .name(let n): return .bad("$filter: \(n) was not expected here.")
            case .other(let c): return .unsupported("$filter: \(c) is not supported here.")
            case .comma: return .bad("$filter: a comma was not expected here.")
            case .open: return .bad("$filter: ( was not expected here.")
            case .close: return .bad("$filter: ) was not expected here.")
            case .slash: return .bad("$filter: / was not expected here.")
            case .literal: return .bad("$filter: a value was not expected here.")
            }
        }

        mutating func keyword(_ k: String) -> Bool {
            if case .name(k) = peek { at += 1; return true }
            return false
        }

        mutating func nest() throws(ODataError) {
            depth += 1
            guard depth <= ODataFilter.maxDepth else { throw .unsupported("$filter nests deeper than this server evaluates (\(ODataFilter.maxDepth) levels).") }
        }

        mutating func parseOr() throws(ODataError) -> Expr {
            try nest()
            defer { depth -= 1 }
            var e = try parseAnd()
            while keyword("or") { e = .or(e, try parseAnd()) }
            return e
        }

        mutating func parseAnd() throws(ODataError) -> Expr {
            var e = try parseUnary()
            while keyword("and") { e = .and(e, try parseUnary()) }
            return e
        }

        mutating func parseUnary() throws(ODataError) -> Expr {
            if keyword("not") {
                try nest()
                defer { depth -= 1 }
                return .not(try parseUnary())
            }
            return try parseCompare()
        }

        /// An operand: a parenthesised expression, a literal or a property path.
        enum Parsed {
            case expr(Expr)
            case operand(Operand, kind: Kind)
        }

        enum Kind: Equatable { case text, number, date, dateTime, bool, null, point }

        mutating func parseCompare() throws(ODataError) -> Expr {
            terms += 1
            guard terms <= ODataFilter.maxTerms else { throw .unsupported("$filter has more terms than this server evaluates (\(ODataFilter.maxTerms)).") }
            let left = try parseOperand()
            let opName: String? = { if case .name(let n) = peek, Comparison(rawValue: n) != nil { return n }; return nil }()
            guard let opName, let op = Comparison(rawValue: opName) else {
                switch left {
                case .expr(let e): return e
                case .operand(.literal(.bool(let b)), _): return .constant(b)
                case .operand:
                    if let t = peek { throw Self.unexpected(t) }
                    throw .bad("$filter: a comparison (eq, ne, gt, ge, lt, le) is missing.")
                }
            }
            at += 1
            let right = try parseOperand()
            guard case .operand(let l, let lk) = left, case .operand(let r, let rk) = right else {
                throw .bad("$filter: \(opName) compares two values, not two conditions.")
            }
            if lk == .point || rk == .point { throw .unsupported("$filter: comparing geopoints is not supported.") }
            guard Self.comparable(lk, rk) else { throw .bad("$filter: \(opName) cannot compare a \(lk) with a \(rk).") }
            if lk == .bool || rk == .bool, op != .eq, op != .ne { throw .bad("$filter: true and false compare only with eq and ne.") }
            return .compare(op, l, r)
        }

        static func comparable(_ a: Kind, _ b: Kind) -> Bool {
            if a == .null || b == .null || a == b { return true }
            let times: Set<Kind> = [.date, .dateTime]
            return times.contains(a) && times.contains(b)
        }

        mutating func parseOperand() throws(ODataError) -> Parsed {
            guard let t = peek else { throw .bad("$filter ends where a value was expected.") }
            switch t {
            case .open:
                at += 1
                let e = try parseOr()
                guard peek == .close else { throw .bad("$filter: a ( is not closed.") }
                at += 1
                return .expr(e)
            case .literal(let v, let kind):
                at += 1
                let k: Kind
                switch kind {
                case .string: k = .text
                case .number: k = .number
                case .bool: k = .bool
                case .null: k = .null
                case .date: k = .date
                case .dateTime: k = .dateTime
                }
                return .operand(.literal(v), kind: k)
            case .name(let first):
                if ["not", "and", "or"].contains(first) || Comparison(rawValue: first) != nil { throw Self.unexpected(t) }
                at += 1
                if peek == .open { throw .unsupported("$filter: the function \(first)() is not supported (only comparisons are).") }
                var path = [first]
                while peek == .slash {
                    at += 1
                    guard case .name(let next) = peek else { throw .bad("$filter: a property name must follow /.") }
                    at += 1
                    if peek == .open {
                        throw .unsupported("$filter: \(next)() is not supported (no lambdas or functions).")
                    }
                    path.append(next)
                }
                if path.contains(where: { $0.contains(".") }) { throw .unsupported("$filter: qualified names (\(path.joined(separator: "/"))) are not supported.") }
                switch resolve(path) {
                case .primitive(let type)?:
                    let k: Kind
                    switch type {
                    case .string: k = .text
                    case .int64, .decimal: k = .number
                    case .date: k = .date
                    case .dateTimeOffset: k = .dateTime
                    case .point: k = .point
                    }
                    return .operand(.path(path, type), kind: k)
                case .complex?: throw .bad("$filter: \(path.joined(separator: "/")) is a group, not a value; name one of its properties.")
                case .navigation?: throw .unsupported("$filter: \(path.joined(separator: "/")) is a repeat; filtering on repeats is not supported.")
                case nil: throw .bad("$filter: there is no property \(path.joined(separator: "/")).")
                }
            case .close, .comma, .slash, .other:
                throw Self.unexpected(t)
            }
        }
    }
}
