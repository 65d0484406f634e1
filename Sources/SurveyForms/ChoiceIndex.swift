/// A select question's choices by name: whether an answer is a choice, and which, costs one hash
/// look-up however long the list is (a list read from a file may hold 100,000 choices). Built
/// once per list when a definition is parsed and shared by every question that names the list.
public final class ChoiceIndex: Sendable, Equatable {
    /// Each choice's place in the question's `options`.
    private let positions: [String: Int]
    /// The later places of a name that comes back (with other columns, for a filter to tell apart).
    private let repeated: [String: [Int]]
    /// Every name is a choice: the entities of a list, which change after the version is published
    /// (a phone may name one created offline whose create has not arrived).
    private let open: Bool
    /// The entity list file an open index stands for (`households.csv`): served from the list.
    public let servedFile: String?

    /// The index of an entity list's file, whose choices are not known when the definition is read.
    static func anyName(of file: String) -> ChoiceIndex { ChoiceIndex([], open: true, servedFile: file) }

    init(_ options: [Choice], open: Bool = false, servedFile: String? = nil) {
        self.open = open
        self.servedFile = servedFile
        var positions: [String: Int] = [:], repeated: [String: [Int]] = [:]
        positions.reserveCapacity(options.count)
        for (i, o) in options.enumerated() {
            if positions[o.name] == nil { positions[o.name] = i } else { repeated[o.name, default: []].append(i) }
        }
        self.positions = positions
        self.repeated = repeated
    }

    public func contains(_ name: String) -> Bool { open || positions[name] != nil }
    public func position(of name: String) -> Int? { positions[name] }
    /// Every place of a name, in order (one, unless the name comes back).
    public func positions(of name: String) -> [Int] {
        guard let first = positions[name] else { return [] }
        return [first] + (repeated[name] ?? [])
    }

    public static func == (a: ChoiceIndex, b: ChoiceIndex) -> Bool { a === b || (a.open == b.open && a.servedFile == b.servedFile && a.positions == b.positions && a.repeated == b.repeated) }
}
