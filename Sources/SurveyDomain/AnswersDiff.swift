/// What changed between two versions of a response's answers: one entry per changed answer,
/// its `path` written as validation errors write theirs (`answers.<id>`, and inside a repeat
/// `answers.<repeatId>[<index, 0-based>].<id>`), `old` and `new` the stored values (`null` when
/// absent). Repeats are compared instance by instance, by index; any other value (a
/// `select_multiple`'s list, a geopoint, a file) is compared whole.
public enum AnswersDiff {
    public struct Change: Sendable, Equatable {
        public let path: String
        public let old: JSONValue
        public let new: JSONValue
        public init(path: String, old: JSONValue, new: JSONValue) { self.path = path; self.old = old; self.new = new }
    }

    /// The changes from `old` to `new` (answer objects; `nil` is no answers at all), in path order.
    public static func changes(from old: JSONValue?, to new: JSONValue) -> [Change] {
        var out: [Change] = []
        compare(old?.objectValue ?? [:], new.objectValue ?? [:], prefix: "answers.", into: &out)
        return out
    }

    private static func compare(_ a: [String: JSONValue], _ b: [String: JSONValue], prefix: String, into out: inout [Change]) {
        for key in Set(a.keys).union(b.keys).sorted() {
            let x = a[key] ?? .null, y = b[key] ?? .null
            guard x != y else { continue }
            let xs = x.arrayValue ?? [], ys = y.arrayValue ?? []
            if isRepeat(x), isRepeat(y), !(xs.isEmpty && ys.isEmpty) {
                for i in 0..<max(xs.count, ys.count) {
                    compare(i < xs.count ? xs[i].objectValue ?? [:] : [:], i < ys.count ? ys[i].objectValue ?? [:] : [:],
                            prefix: "\(prefix)\(key)[\(i)].", into: &out)
                }
            } else {
                out.append(Change(path: prefix + key, old: x, new: y))
            }
        }
    }

    /// A repeat's answer: a list of instances (objects); absent or empty counts as no instance.
    private static func isRepeat(_ v: JSONValue) -> Bool {
        switch v {
        case .null: true
        case .array(let items): items.allSatisfy { $0.objectValue != nil }
        default: false
        }
    }
}
