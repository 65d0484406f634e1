// JSONParser and CanonicalJSON (request bodies, digests, replays). Properties: whatever parses
// has a canonical form that parses to the same document, bit for bit (strings by their bytes,
// numbers by their bits but the sign of zero, which JCS drops), and encodes to the same bytes
// again; keys come out in UTF-16 order; the one-member-added and pairs encoders agree with the
// plain one. The input's first 8 bytes are also read as a double, which must survive
// `CanonicalJSON.number` and the parser unchanged.
@testable import SurveyDomain
@testable import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    roundTrip(bytes)
    if size >= 8 { numberRoundTrip(UnsafeRawPointer(data).loadUnaligned(as: UInt64.self)) }
    return 0
}

private func fail(_ what: String, _ input: [UInt8]) -> Never {
    fatalError("\(what): \(String(decoding: input, as: UTF8.self))")
}

private func roundTrip(_ bytes: [UInt8]) {
    guard let value = try? JSONParser.parse(bytes) else { return }
    let canonical = CanonicalJSON.encode(value)
    let again: JSONValue
    do { again = try JSONParser.parse(canonical) } catch { fail("canonical form does not parse (\(error))", canonical) }
    guard same(value, again) else { fail("canonical form parses to another document", canonical) }
    guard CanonicalJSON.encode(again) == canonical else { fail("canonical form is not stable", canonical) }
    guard !hasWhitespaceOutsideStrings(canonical) else { fail("canonical form has whitespace", canonical) }
    checkKeyOrder(value, canonical)
    if case .object(let members) = value, let key = members.keys.first, let member = members[key] {
        let added = CanonicalJSON.encode(members, adding: key, encoded: CanonicalJSON.encode(member))
        guard added == canonical else { fail("encode(adding:) differs from encode", added) }
        let pairs = CanonicalJSON.encodeObject(members.map { ($0.key, $0.value) })
        guard pairs == canonical else { fail("encodeObject differs from encode", pairs) }
    }
}

private func numberRoundTrip(_ bits: UInt64) {
    let d = Double(bitPattern: bits)
    guard d.isFinite else {
        guard CanonicalJSON.number(d) == "null" else { fatalError("non-finite \(d) not written as null") }
        return
    }
    let text = CanonicalJSON.number(d)
    guard case .number(let back)? = try? JSONParser.parse(Array(text.utf8)) else { fatalError("\(d) written as \(text), which does not parse") }
    guard back == d, back.sign == .plus || d.sign == .minus else { fatalError("\(d) written as \(text), read back as \(back)") }
    guard CanonicalJSON.number(back) == text else { fatalError("\(d): \(text) is not stable") }
}

/// Equality without Swift's canonical equivalence of strings: the canonical form must keep
/// every byte. Zero's sign is the one difference JCS makes (-0 is written 0).
private func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.number(let x), .number(let y)): return x == 0 ? y == 0 : x.bitPattern == y.bitPattern
    case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.object(let x), .object(let y)):
        guard x.count == y.count else { return false }
        let xs = x.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        let ys = y.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        return zip(xs, ys).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && same($0.value, $1.value) }
    default: return false
    }
}

private func hasWhitespaceOutsideStrings(_ bytes: [UInt8]) -> Bool {
    var inString = false, escaped = false
    for b in bytes {
        if inString {
            if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
        } else if b == UInt8(ascii: "\"") {
            inString = true
        } else if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
            return true
        }
    }
    return false
}

/// RFC 8785: members sorted by the UTF-16 code units of their keys.
private func checkKeyOrder(_ v: JSONValue, _ input: [UInt8]) {
    switch v {
    case .array(let items): for item in items { checkKeyOrder(item, input) }
    case .object(let members):
        let order = CanonicalJSON.SortKey.order(members).map { members[$0.index].key }
        for (a, b) in zip(order, order.dropFirst()) where !a.utf16.lexicographicallyPrecedes(b.utf16) {
            fail("keys out of UTF-16 order", input)
        }
        for (a, b) in zip(order, order.dropFirst()) where CanonicalJSON.utf16Precedes(a, b) != a.utf16.lexicographicallyPrecedes(b.utf16)
            || CanonicalJSON.utf16Precedes(b, a) != b.utf16.lexicographicallyPrecedes(a.utf16) {
            fail("utf16Precedes disagrees with the UTF-16 views", input)
        }
        for value in members.values { checkKeyOrder(value, input) }
    default: break
    }
}
