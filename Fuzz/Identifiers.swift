// Client ids and cursors: the Idempotency-Key header's normalisation (what
// `IdempotencyKey.normalized` calls), `ClientIdentifier.scan` of raw JSON bodies, the sealed
// export and changes-feed cursors, and the server's own ids.
@testable import SurveyDomain
@testable import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let s = String(decoding: bytes, as: UTF8.self)
    headerKey(s)
    scan(bytes)
    cursors(s)
    if size >= 8 { ids(bytes) }
    return 0
}

private func headerKey(_ s: String) {
    let valid = ClientIdentifier.isValid(s)
    let plain = s.utf8.count >= 8 && s.utf8.count <= 128 && s.utf8.allSatisfy { b in
        (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == 0x5F || b == 0x2D || b == 0x3A || b == 0x2E
    }
    guard valid == plain else { fatalError("isValid(\(s)) is \(valid)") }
    guard let key = ClientIdentifier.normalize(headerValue: s) else {
        if valid { fatalError("a valid id \(s) does not normalize") }
        return
    }
    guard ClientIdentifier.isValid(key), ClientIdentifier.normalize(headerValue: key) == key, contains(Array(s.utf8), Array(key.utf8)) else {
        fatalError("\(s) normalizes to \(key)")
    }
}

/// `scan` is a hint, but what it returns must be a valid id written in the body; and for a
/// body whose only mention of the key is a top-level member with a plain valid id, it must
/// find that id.
private func scan(_ bytes: [UInt8]) {
    for key in ["clientSubmissionId", "clientUploadId"] {
        let found = ClientIdentifier.scan(bytes, key: key)
        if let found {
            guard ClientIdentifier.isValid(found), contains(bytes, Array("\"\(found)\"".utf8)) else { fatalError("scan found \(found)") }
        }
        let quoted = Array("\"\(key)\"".utf8)
        guard !bytes.contains(UInt8(ascii: "\\")), occurrences(bytes, quoted) == 1,
              let id = (try? JSONParser.parse(bytes))?[key]?.stringValue, ClientIdentifier.isValid(id) else { continue }
        guard found == id else { fatalError("scan found \(String(describing: found)), the body says \(id)") }
    }
}

private let key = [UInt8](repeating: 7, count: 32)

/// A cursor read back is one this key sealed for this organization and purpose: sealing its
/// number again reads back the same number, never as the other purpose or organization.
private func cursors(_ s: String) {
    for (cursor, other) in [(SealedCursor.export, SealedCursor.changes), (SealedCursor.changes, SealedCursor.export)] {
        guard let n = cursor.parse(s, orgId: "org_a", key: key) else { continue }
        guard n >= 0, other.parse(s, orgId: "org_a", key: key) == nil, cursor.parse(s, orgId: "org_b", key: key) == nil else {
            fatalError("cursor \(s) read as \(n) for another purpose or organization")
        }
        guard cursor.parse(cursor.make(n, orgId: "org_a", key: key), orgId: "org_a", key: key) == n,
              n == 0 || cursor.parse(s, orgId: "org_a", key: key, latest: n - 1) == nil else {
            fatalError("cursor \(s): \(n) does not round-trip or latest is not respected")
        }
    }
    // A sealed cursor of a number fuzzed from the input reads back as that number.
    if let n = Int64(s.prefix(18)), n >= 0 {
        let made = SealedCursor.changes.make(n, orgId: "org_a", key: key)
        guard SealedCursor.changes.parse(made, orgId: "org_a", key: key) == n else { fatalError("\(n) does not round-trip") }
    }
}

/// The body of the id made before (ids of one process only ever grow).
nonisolated(unsafe) private var previousId: [UInt8] = []

/// `<prefix>_` and a UUIDv7 whose first 48 bits are the time — this call's, or a later one when
/// an id was made later than it already — each after the one made before it.
private func ids(_ bytes: [UInt8]) {
    let raw = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    let ms = Int64(raw & 0xFFFF_FFFF_FFFF)
    let prefix = String(decoding: bytes.dropFirst(8).prefix(6).map { UInt8(ascii: "a") + $0 % 26 }, as: UTF8.self)
    let id = Ids.make(prefix, nowMillis: ms)
    let u = Array(id.utf8)
    let p = prefix.utf8.count
    guard u.count == p + 37, id.hasPrefix(prefix + "_") else { fatalError("id \(id)") }
    let body = Array(u[(p + 1)...])
    for (i, b) in body.enumerated() {
        let ok = [8, 13, 18, 23].contains(i) ? b == UInt8(ascii: "-") : (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66)
        guard ok else { fatalError("id \(id)") }
    }
    let hex = body.filter { $0 != UInt8(ascii: "-") }
    guard hex[12] == UInt8(ascii: "7"), [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(hex[16]),
          let embedded = UInt64(String(decoding: hex[0..<12], as: UTF8.self), radix: 16), embedded >= UInt64(ms) else { fatalError("id \(id) for \(ms)") }
    // At the last millisecond 48 bits hold (the year 10889) the order can no longer grow.
    guard embedded == 0xFFFF_FFFF_FFFF || previousId.isEmpty || hex.lexicographicallyPrecedes(previousId) == false && hex != previousId else {
        fatalError("id \(id) is not after \(String(decoding: previousId, as: UTF8.self))")
    }
    previousId = hex
}

private func occurrences(_ haystack: [UInt8], _ needle: [UInt8]) -> Int {
    guard haystack.count >= needle.count else { return 0 }
    return (0...(haystack.count - needle.count)).count { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool { occurrences(haystack, needle) > 0 }
