// Timestamp.parse and format (receivedFrom/receivedTo of exports, times in documents) and the
// calendar check of date answers. Properties: a parsed instant lies in years 0001-9999 and
// survives format and parse; a string already in the form `format` writes comes back as
// itself (Hinnant's days-from-civil against gmtime); any Int64 formats to a string that parses
// to the clamped value; a date answer is a calendar day exactly when its midnight parses.
@testable import SurveyDomain
@testable import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let s = String(decoding: bytes, as: UTF8.self)
    if let ms = Timestamp.parse(s) {
        guard ms >= Timestamp.minMillis, ms <= Timestamp.maxMillis else { fatalError("\(s) parsed out of range: \(ms)") }
        let formatted = Timestamp.format(ms)
        guard Timestamp.parse(formatted) == ms else { fatalError("\(s) -> \(ms) -> \(formatted) does not parse back") }
        if isFormatShape(Array(s.utf8)), formatted != s { fatalError("\(s) formats back as \(formatted)") }
    }
    if size >= 8 {
        let ms = UnsafeRawPointer(data).loadUnaligned(as: Int64.self)
        let clamped = min(max(ms, Timestamp.minMillis), Timestamp.maxMillis)
        let formatted = Timestamp.format(ms)
        guard Timestamp.parse(formatted) == clamped else { fatalError("\(ms) formats as \(formatted), which does not parse to \(clamped)") }
    }
    if let isDay = Question.isCalendarDate(s), !s.hasPrefix("0000") {
        let midnight = Timestamp.parse(s + "T00:00:00Z")
        guard isDay == (midnight != nil) else { fatalError("\(s): calendar date \(isDay), midnight \(String(describing: midnight))") }
    }
    return 0
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, digits where `format` puts them.
private func isFormatShape(_ u: [UInt8]) -> Bool {
    guard u.count == 24 else { return false }
    for (i, b) in u.enumerated() {
        switch i {
        case 4, 7: if b != UInt8(ascii: "-") { return false }
        case 10: if b != UInt8(ascii: "T") { return false }
        case 13, 16: if b != UInt8(ascii: ":") { return false }
        case 19: if b != UInt8(ascii: ".") { return false }
        case 23: if b != UInt8(ascii: "Z") { return false }
        default: if b < UInt8(ascii: "0") || b > UInt8(ascii: "9") { return false }
        }
    }
    return true
}
