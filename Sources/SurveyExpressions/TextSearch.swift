/// Substring search over UTF-8 bytes in linear time (Knuth-Morris-Pratt), so `contains` and
/// `substring-before` on long answers cost O(n + m) and never O(n × m). Comparing bytes is
/// comparing code points, as XPath and JavaRosa do (no Unicode normalization); a match of valid
/// UTF-8 in valid UTF-8 always starts and ends on scalar boundaries.
enum TextSearch {
    /// The byte offset of the first occurrence of `needle` in `haystack`, 0 for an empty needle.
    static func firstOffset(of needle: String, in haystack: String) -> Int? {
        var n = needle
        var h = haystack
        return n.withUTF8 { nb in h.withUTF8 { hb in firstOffset(of: nb, in: hb) } }
    }

    static func firstOffset(of needle: UnsafeBufferPointer<UInt8>, in haystack: UnsafeBufferPointer<UInt8>) -> Int? {
        let m = needle.count
        if m == 0 { return 0 }
        guard m <= haystack.count else { return nil }
        if m == 1 { return haystack.firstIndex(of: needle[0]) }
        // failure[i]: length of the longest proper border of needle[0...i].
        var failure = [Int](repeating: 0, count: m)
        var k = 0
        for i in 1..<m {
            while k > 0 && needle[i] != needle[k] { k = failure[k - 1] }
            if needle[i] == needle[k] { k += 1 }
            failure[i] = k
        }
        k = 0
        for (i, b) in haystack.enumerated() {
            while k > 0 && b != needle[k] { k = failure[k - 1] }
            if b == needle[k] { k += 1 }
            if k == m { return i - m + 1 }
        }
        return nil
    }

    static func hasPrefix(_ s: String, _ prefix: String) -> Bool {
        s.utf8.starts(with: prefix.utf8)
    }

    static func hasSuffix(_ s: String, _ suffix: String) -> Bool {
        s.utf8.reversed().starts(with: suffix.utf8.reversed())
    }

    static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Over contiguous bytes (every native string): a tenth of comparing the views.
        let same = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                for i in 0..<x.count where x[i] != y[i] { return false }
                return true
            }
        }
        if let same, let same { return same }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// The Unicode scalars of a string, counted over its bytes (those that do not continue a
    /// scalar): `unicodeScalars.count` walks scalar indices, many times slower.
    static func scalarCount(_ s: String) -> Int {
        let counted = s.utf8.withContiguousStorageIfAvailable { bytes in
            var n = 0
            for b in bytes where b & 0xC0 != 0x80 { n += 1 }
            return n
        }
        return counted ?? s.unicodeScalars.count
    }
}
