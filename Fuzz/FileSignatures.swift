// The sniffing of uploaded files' first bytes against their declared type (FileSignature) and
// the declared type's normalisation. The first input byte picks a known type (from twice the
// list's length on, with a parameter); from four times its length on, the bytes up to the first
// NUL are the Content-Type. The rest is the file.
// Properties: normalisation is idempotent and keeps no parameters; a text type matches exactly
// the valid UTF-8 without NUL (a cut last character only when the file goes on).
@testable import SurveyDomain
@testable import SurveyForms

private let types = FileSignature.knownTypes.sorted()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var file = Array(bytes.dropFirst())
    let type: String
    if Int(bytes[0]) < types.count * 4 {
        type = types[Int(bytes[0]) % types.count] + (Int(bytes[0]) >= types.count * 2 ? "; charset=utf-8" : "")
    } else {
        let end = file.firstIndex(of: 0) ?? file.count
        type = String(decoding: file[..<end], as: UTF8.self)
        file = Array(file[min(end + 1, file.count)...])
    }
    let normalized = FileSignature.normalizedType(type)
    // Bytes, not Characters: U+037E is canonically equivalent to ";" but is not a separator.
    guard FileSignature.normalizedType(normalized) == normalized, !normalized.utf8.contains(UInt8(ascii: ";")) else {
        fatalError("\(type) normalizes to \(normalized)")
    }
    let prefix = Array(file.prefix(FileSignature.prefixLength))
    for total in [file.count, file.count + 1] {
        let matches = FileSignature.matches(contentType: type, prefix: prefix, totalSize: total)
        if matches, !FileSignature.knownTypes.contains(normalized) { fatalError("unknown type \(type) matched") }
        if FileSignature.isTextType(type), matches != isText(prefix, cutAllowed: prefix.count < total) {
            fatalError("\(type): \(prefix) matched \(matches)")
        }
    }
    return 0
}

/// Valid UTF-8 without NUL; when cut, also what some completion of its last character makes
/// valid (one candidate second byte in each lead byte's allowed range, then 0x80s).
private func isText(_ p: [UInt8], cutAllowed: Bool) -> Bool {
    guard !p.contains(0) else { return false }
    if String(validating: p, as: UTF8.self) != nil { return true }
    guard cutAllowed else { return false }
    for second: UInt8 in [0x80, 0x90, 0xA0] {
        for extra in 0...2 where String(validating: p + [second] + repeatElement(0x80, count: extra), as: UTF8.self) != nil {
            return true
        }
    }
    return false
}
