/// A select question's choices by name: whether an answer is a choice, and which, costs one hash
/// look-up however long the list is (a list read from a file may hold 100,000 choices). Built
/// once per list when a definition is parsed and shared by every question that names the list.
public final class ChoiceIndex: Sendable, Equatable {
    /// Each choice's place in the question's `options`.
    private let positions: [String: Int]
    /// The later places of a name that comes back (with other columns, for a filter to tell apart).
    private let repeated: [String: [Int]]

    init(_ options: [Choice]) {
        var positions: [String: Int] = [:], repeated: [String: [Int]] = [:]
        positions.reserveCapacity(options.count)
        for (i, o) in options.enumerated() {
            if positions[o.name] == nil { positions[o.name] = i } else { repeated[o.name, default: []].append(i) }
        }
        self.positions = positions
        self.repeated = repeated
    }

    public func contains(_ name: String) -> Bool { positions[name] != nil }
    public func position(of name: String) -> Int? { positions[name] }
    /// Every place of a name, in order (one, unless the name comes back).
    public func positions(of name: String) -> [Int] {
        guard let first = positions[name] else { return [] }
        return [first] + (repeated[name] ?? [])
    }

    public static func == (a: ChoiceIndex, b: ChoiceIndex) -> Bool { a === b || (a.positions == b.positions && a.repeated == b.repeated) }
}
