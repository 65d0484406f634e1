/// Reads facts bytes entry by entry without building anything (`next`), or whole (`all`); stops
/// at the first byte that is not what `SummaryFacts` writes.
public struct SummaryFactsReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var at: Int

    /// Nil when the bytes are not of the format this reader knows.
    public init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.first == SummaryFacts.format else { return nil }
        self.bytes = bytes
        at = 1
    }

    public enum Entry {
        case none
        case answered
        /// A text's bytes in the buffer.
        case text(UnsafeBufferPointer<UInt8>)
        /// How many choices follow; read each with `nextChoice()`.
        case choices(Int)
        case number(Double)
        /// A choice by its place in the version's options.
        case choice(Int)
        /// How many places follow; read each with `nextPlace()`.
        case places(Int)
        /// A question inside repeats: how many entries follow, one an instance (`next()`).
        case repeated(Int)
    }

    /// The next question's entry and whether the logic hid it; nil at the end or at a bad byte.
    public mutating func next() -> (entry: Entry, hidden: Bool)? {
        guard at < bytes.count else { return nil }
        let tag = bytes[at]
        at += 1
        let hidden = tag & SummaryFacts.hiddenFlag != 0
        switch tag & ~SummaryFacts.hiddenFlag {
        case 1: return (.none, hidden)
        case 2: return (.answered, hidden)
        case 3: return text().map { (.text($0), hidden) }
        case 4: return count().map { (.choices($0), hidden) }
        case 5:
            guard at + 8 <= bytes.count else { return nil }
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
            at += 8
            return (.number(Double(bitPattern: bits)), hidden)
        case 6: return u32().map { (.choice($0), hidden) }
        case 7: return count().map { (.places($0), hidden) }
        case 8: return u32().map { (.repeated($0), hidden) }
        default: return nil
        }
    }

    /// Reads past what follows an entry of choices or places (nothing for another entry);
    /// false at a bad byte.
    public mutating func skipItems(of entry: Entry) -> Bool {
        switch entry {
        case .choices(let n): for _ in 0..<n { guard nextChoice() != nil else { return false } }
        case .places(let n): for _ in 0..<n { guard nextPlace() != nil else { return false } }
        default: break
        }
        return true
    }

    /// One place of a `.places` entry.
    public mutating func nextPlace() -> Int? { u32() }

    private mutating func u32() -> Int? {
        guard at + 4 <= bytes.count else { return nil }
        let n = Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
        at += 4
        return n
    }

    /// One choice of a `.choices` entry.
    public mutating func nextChoice() -> UnsafeBufferPointer<UInt8>? { text() }

    private mutating func count() -> Int? {
        guard at + 2 <= bytes.count else { return nil }
        let n = Int(bytes[at]) | Int(bytes[at + 1]) << 8
        at += 2
        return n
    }

    private mutating func text() -> UnsafeBufferPointer<UInt8>? {
        guard let n = count(), at + n <= bytes.count else { return nil }
        defer { at += n }
        return UnsafeBufferPointer(rebasing: bytes[at..<(at + n)])
    }

    /// Every entry as values (tests, `surveyd check`).
    public static func all(_ facts: [UInt8]) -> [(answer: SummaryFacts.Answer, hidden: Bool)]? {
        facts.withUnsafeBufferPointer { buffer in
            guard var r = SummaryFactsReader(buffer) else { return nil }
            var out: [(answer: SummaryFacts.Answer, hidden: Bool)] = []
            while r.at < buffer.count {
                guard let (entry, hidden) = r.next() else { return nil }
                switch entry {
                case .none: out.append((.none, hidden))
                case .answered: out.append((.answered, hidden))
                case .text(let t): out.append((.text(String(decoding: t, as: UTF8.self)), hidden))
                case .number(let d): out.append((.number(d), hidden))
                case .choice(let p): out.append((.choice(p), hidden))
                case .places(let n):
                    var places: [Int] = []
                    for _ in 0..<n {
                        guard let p = r.nextPlace() else { return nil }
                        places.append(p)
                    }
                    out.append((.places(places), hidden))
                case .repeated(let n): out.append((.instances(n), hidden))
                case .choices(let n):
                    var texts: [String] = []
                    for _ in 0..<n {
                        guard let t = r.nextChoice() else { return nil }
                        texts.append(String(decoding: t, as: UTF8.self))
                    }
                    out.append((.choices(texts), hidden))
                }
            }
            return out
        }
    }
}
