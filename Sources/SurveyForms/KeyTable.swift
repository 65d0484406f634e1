/// The slots of a level's ids, found from a key's UTF-8 bytes: open addressing over FNV-1a
/// hashes, so that reading an object of answers hashes each key once and cheaply, where a
/// `[String: Int]` look-up runs SipHash over it (a third of reading a roster's answers).
///
/// Ids are ASCII (`isValidQuestionId`), and an ASCII key equals an ASCII id exactly when their
/// bytes do. A key that is not ASCII may still equal an id as Swift compares strings (canonical
/// equivalence: U+212A KELVIN SIGN is "K"), so it is looked up in `keys`, as is every key of a
/// level with an id that is not ASCII.
struct KeyTable: Sendable {
    /// Slot + 1 by hash, 0 when empty; a power of two at least twice the ids, so a probe ends.
    private let table: [Int32]
    /// The ids' bytes one after another; slot `s` is `bytes[starts[s]..<starts[s + 1]]`.
    private let bytes: [UInt8]
    private let starts: [Int]
    private let keys: [String: Int]
    private let ascii: Bool

    init(_ ids: [String]) {
        var keys: [String: Int] = [:]
        for (slot, id) in ids.enumerated() { keys[id] = slot }
        self.keys = keys
        ascii = ids.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }
        var size = 8
        while size < 2 * ids.count { size *= 2 }
        var table = [Int32](repeating: 0, count: size)
        var bytes: [UInt8] = [], starts: [Int] = []
        for (slot, id) in ids.enumerated() {
            starts.append(bytes.count)
            bytes.append(contentsOf: id.utf8)
            var i = Int(truncatingIfNeeded: KeyTable.hash(id.utf8)) & (size - 1)
            while table[i] != 0 { i = (i + 1) & (size - 1) }
            table[i] = Int32(slot + 1)
        }
        starts.append(bytes.count)
        self.table = table
        self.bytes = bytes
        self.starts = starts
    }

    /// The slot of the id equal to `key`, or nil.
    func slot(of key: String) -> Int? {
        guard ascii, let found = key.utf8.withContiguousStorageIfAvailable({ find($0) }), found != -2 else { return keys[key] }
        return found >= 0 ? found : nil
    }

    /// The slot of these bytes; -1 when no id has them, -2 when they are not ASCII.
    private func find(_ k: UnsafeBufferPointer<UInt8>) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var high: UInt8 = 0
        for b in k {
            h = (h ^ UInt64(b)) &* 0x100_0000_01b3
            high |= b
        }
        if high >= 0x80 { return -2 }
        return table.withUnsafeBufferPointer { table in
            bytes.withUnsafeBufferPointer { bytes in
                let mask = table.count - 1
                var i = Int(truncatingIfNeeded: h) & mask
                while true {
                    let slot = Int(table[i]) - 1
                    if slot < 0 { return -1 }
                    let from = starts[slot]
                    if starts[slot + 1] - from == k.count, KeyTable.same(k, UnsafeBufferPointer(rebasing: bytes[from..<(from + k.count)])) {
                        return slot
                    }
                    i = (i + 1) & mask
                }
            }
        }
    }

    /// Equal bytes, compared eight at a time.
    private static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count, let x = a.baseAddress, let y = b.baseAddress else { return a.count == b.count }
        let n = a.count
        var i = 0
        while i + 8 <= n {
            if UnsafeRawPointer(x).loadUnaligned(fromByteOffset: i, as: UInt64.self)
                != UnsafeRawPointer(y).loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        while i < n {
            if x[i] != y[i] { return false }
            i += 1
        }
        return true
    }

    private static func hash(_ bytes: String.UTF8View) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }
}
