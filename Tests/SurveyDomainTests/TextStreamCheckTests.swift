import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// A text file is valid UTF-8 without NUL from its first byte to its last, however it is cut.
@Suite struct TextStreamCheckTests {
    static func check(_ bytes: [UInt8], pieces: Int) -> Bool {
        var c = TextStreamCheck()
        let size = max(1, (bytes.count + pieces - 1) / pieces)
        var i = 0
        while i < bytes.count {
            let piece = Array(bytes[i..<min(bytes.count, i + size)])
            piece.withUnsafeBytes { c.update($0) }
            i += size
        }
        return c.isValidText
    }

    @Test func validTextCutAnywhereIsText() {
        let text = Array("ascii, é, €, 😀 and more\n".utf8)
        for pieces in 1...text.count {
            #expect(Self.check(text, pieces: pieces), "cut into \(pieces)")
        }
        #expect(Self.check([], pieces: 1))
    }

    @Test func anyBadByteAnywhereIsNotText() {
        let text = Array(String(repeating: "row,é,😀\n", count: 20).utf8)
        for bad: [UInt8] in [[0], [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80]] {
            for at in [0, 1, 64, 65, text.count] {
                let bytes = Array(text[0..<at]) + bad + Array(text[at...])
                for pieces in [1, 3, 7, bytes.count] {
                    #expect(!Self.check(bytes, pieces: pieces), "\(bad) at \(at) in \(pieces) pieces")
                }
            }
        }
        // A sequence cut by the end of the file.
        #expect(!Self.check(text + [0xF0, 0x9F, 0x98], pieces: 2))
    }
}
