import Foundation

/// What a row needs from a stored answers object besides its cells, found in place: a repeat's
/// instances (the rows of a repeat's table) and how many files the answers name. Each answers
/// nil on text that is not JSON, leaving the caller to the general path.
public enum StoredAnswers {
    /// The byte ranges of the instances of the repeat `repeatId` in the answers object `json`,
    /// as `answers[repeatId]?.arrayValue ?? []` lists them (a value that is not an array: none).
    public static func instances(of repeatId: [UInt8], in json: UnsafeBufferPointer<UInt8>) -> [Range<Int>]? {
        var p = JSONBytes(json)
        guard p.take(UInt8(ascii: "{")) else { return nil }
        var found: [Range<Int>] = []
        if p.take(UInt8(ascii: "}")) { return p.atEnd ? found : nil }
        var key: [UInt8] = []
        repeat {
            key.removeAll(keepingCapacity: true)
            guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return nil }
            if key == repeatId, p.take(UInt8(ascii: "[")) {
                if !p.take(UInt8(ascii: "]")) {
                    repeat {
                        guard p.peek != nil else { return nil }
                        let from = p.offset
                        guard p.skipValue() else { return nil }
                        found.append(from..<p.offset)
                    } while p.take(UInt8(ascii: ","))
                    guard p.take(UInt8(ascii: "]")) else { return nil }
                }
            } else {
                guard p.skipValue() else { return nil }
            }
        } while p.take(UInt8(ascii: ","))
        return p.take(UInt8(ascii: "}")) && p.atEnd ? found : nil
    }

    /// How many file answers `json` names: objects with a string `clientUploadId`, at any
    /// depth (such an object counts once, whatever it holds).
    public static func fileCount(_ json: UnsafeBufferPointer<UInt8>) -> Int? {
        // Most answers name no file: one search of the bytes instead of a walk.
        guard contains(clientUploadId, in: json) else { return 0 }
        var p = JSONBytes(json)
        guard let n = files(&p), p.atEnd else { return nil }
        return n
    }

    private static func files(_ p: inout JSONBytes) -> Int? {
        switch p.peek {
        case UInt8(ascii: "{"):
            _ = p.take(UInt8(ascii: "{"))
            if p.take(UInt8(ascii: "}")) { return 0 }
            var sum = 0, isFile = false
            var key: [UInt8] = []
            repeat {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return nil }
                if key == uploadKey, p.peek == UInt8(ascii: "\"") {
                    isFile = true
                    guard p.skipValue() else { return nil }
                } else {
                    guard let n = files(&p) else { return nil }
                    sum += n
                }
            } while p.take(UInt8(ascii: ","))
            guard p.take(UInt8(ascii: "}")) else { return nil }
            return isFile ? 1 : sum
        case UInt8(ascii: "["):
            _ = p.take(UInt8(ascii: "["))
            if p.take(UInt8(ascii: "]")) { return 0 }
            var sum = 0
            repeat {
                guard let n = files(&p) else { return nil }
                sum += n
            } while p.take(UInt8(ascii: ","))
            return p.take(UInt8(ascii: "]")) ? sum : nil
        default:
            return p.skipValue() ? 0 : nil
        }
    }

    /// Whether `needle` occurs in `hay`: each `U` (rare in answers) tried as the needle's.
    static func contains(_ needle: [UInt8], in hay: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let anchor = needle.firstIndex(of: UInt8(ascii: "U")), let base = hay.baseAddress, hay.count >= needle.count else { return false }
        var from = anchor
        let last = hay.count - needle.count + anchor  // the anchor's last possible place
        while from <= last {
            guard let hit = memchr(base + from, Int32(UInt8(ascii: "U")), last - from + 1) else { return false }
            let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            let same = needle.withUnsafeBufferPointer { n in n.baseAddress.map { memcmp(base + at - anchor, $0, n.count) == 0 } ?? false }
            if same { return true }
            from = at + 1
        }
        return false
    }

    private static let uploadKey = Array("clientUploadId".utf8)
    /// The key as it appears in JSON text, quotes included.
    private static let clientUploadId = Array("\"clientUploadId\"".utf8)
}
