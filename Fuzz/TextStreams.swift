// Text uploads checked as they stream in (TextStreamCheck over UTF8Validation), against Swift's
// own UTF-8 validation. The first input byte seeds how the rest is cut into chunks (as a
// connection may deliver it); the chunked check must agree with the whole-buffer one, and both
// with "valid UTF-8 and no NUL".
import SurveyDomain

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[1...])
    let expected = !text.contains(0) && String(validating: text, as: UTF8.self) != nil

    var whole = TextStreamCheck()
    whole.update(text)
    var chunked = TextStreamCheck()
    var state = UInt32(bytes[0]) | 1
    var at = 0
    while at < text.count {
        // Chunks of 0 to 7 bytes: every cut of a 4-byte sequence, and empty updates.
        state = state &* 1_103_515_245 &+ 12_345
        let n = min(Int(state >> 16) % 8, text.count - at)
        chunked.update(UnsafeRawBufferPointer(rebasing: text[at..<(at + n)]))
        at += n
    }
    guard whole.isValidText == expected, chunked.isValidText == expected else {
        fatalError("\(Array(text)): whole \(whole.isValidText), chunked \(chunked.isValidText), expected \(expected)")
    }
    return 0
}
