import Foundation
import Testing
@testable import SurveyXForm

/// Documents an attacker could publish: each is refused quickly, without reading a file, without
/// expanding entities and without exhausting the stack or memory.
@Suite struct HostileInputTests {
    /// Refused, within a second, with a message that contains `expected`.
    func refusedQuickly(_ bytes: [UInt8], saying expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let clock = ContinuousClock()
        var refusal: XFormRefusal?
        let elapsed = clock.measure {
            do { _ = try XFormReader.definition(from: bytes) } catch let e as XFormRefusal { refusal = e } catch {}
        }
        #expect(refusal?.message.contains(expected) == true, "\(refusal?.message ?? "accepted")", sourceLocation: sourceLocation)
        #expect(elapsed < .seconds(1), "took \(elapsed)", sourceLocation: sourceLocation)
    }

    @Test func externalEntityIsRefusedWithoutReadingTheFile() {
        let xxe = """
            <?xml version="1.0"?>
            <!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
            <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml"><h:head><h:title>&e;</h:title></h:head></h:html>
            """
        refusedQuickly(Array(xxe.utf8), saying: "DOCTYPE")
    }

    @Test func billionLaughsIsRefused() {
        var doc = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n"
        doc += "<!ENTITY lol1 \"" + String(repeating: "&lol;", count: 10) + "\">\n"
        for level in 2...9 { doc += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">\n" }
        doc += "]>\n<lolz>&lol9;</lolz>"
        refusedQuickly(Array(doc.utf8), saying: "DOCTYPE")
    }

    @Test func anEntityReferenceWithoutADeclarationIsRefused() {
        refusedQuickly(Array("<x>&e;</x>".utf8), saying: "not well-formed")
    }

    @Test func utf16HidingADoctypeIsRefused() {
        let doc = "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>"
        refusedQuickly([0xFF, 0xFE] + doc.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }, saying: "not UTF-8")
    }

    @Test func aDeclarationIsFoundWhereverItStands() {
        // First bytes, last bytes, and behind many '<' that are not one.
        refusedQuickly(Array("<!DOCTYPE x><x/>".utf8), saying: "DOCTYPE")
        refusedQuickly(Array("<x/><!ENTITY".utf8), saying: "DOCTYPE")
        refusedQuickly(Array((String(repeating: "<a/><!-- <! -->", count: 1000) + "<!ENTITY e \"x\">").utf8), saying: "DOCTYPE")
        refusedQuickly(Array("<x/>".utf8) + [0], saying: "NUL")
    }

    @Test func hundredThousandDeepNestingIsRefused() {
        let depth = 100_000
        let doc = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        refusedQuickly(Array(doc.utf8), saying: "not well-formed")
    }

    @Test func fiftyMegabytesAreRefusedBeforeParsing() {
        let doc = Array("<a>".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 50 * 1024 * 1024) + Array("</a>".utf8)
        refusedQuickly(doc, saying: "at most 10485760 bytes")
    }

    @Test func emptyAndMalformedInputsAreRefused() {
        refusedQuickly([], saying: "empty")
        refusedQuickly(Array("<h:html".utf8), saying: "not well-formed")
        refusedQuickly(Array("<a>\u{0}</a>".utf8), saying: "NUL")
        refusedQuickly(Array("<survey/>".utf8), saying: "not the <h:html> of an XForm")
    }

    /// Nesting libxml2 accepts but a definition does not (16 levels) is refused by the definition's rule.
    @Test func groupsNestedDeeperThanADefinitionAllowsAreRefused() {
        let depth = 40
        var instance = "<q/>", body = "<input ref=\"/data/" + (1...depth).map { "g\($0)" }.joined(separator: "/") + "/q\"><label>Q</label></input>"
        for level in stride(from: depth, through: 1, by: -1) {
            instance = "<g\(level)>" + instance + "</g\(level)>"
            body = "<group ref=\"/data/" + (1...level).map { "g\($0)" }.joined(separator: "/") + "\"><label>G</label>" + body + "</group>"
        }
        let doc = XFormDocument.make(instance: instance, binds: "", body: body)
        refusedQuickly(Array(doc.utf8), saying: "nest at most 16 deep")
    }

    /// Nesting past what any form needs is refused while the document is copied out of libxml2,
    /// before any reader recurses over it: 65 levels, in the instance or in the body alike.
    @Test func elementsNestedDeeperThanAnyFormNeedsAreRefusedWhileReading() {
        for depth in [65, 200, 255] {
            let doc = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
            refusedQuickly(Array(doc.utf8), saying: "more than 64 deep")
        }
        let instance = XFormDocument.make(instance: String(repeating: "<a>", count: 150) + String(repeating: "</a>", count: 150), binds: "", body: "")
        refusedQuickly(Array(instance.utf8), saying: "more than 64 deep")
        #expect(throws: XFormRefusal.self) { try SubmittedInstance(xml: Array(("<data id=\"x\">" + String(repeating: "<g>", count: 70) + String(repeating: "</g>", count: 70) + "</data>").utf8)) }
    }

    @Test func aDeclaredEncodingOtherThanUTF8IsRefused() {
        for declared in ["UTF-16", "ISO-8859-1", "windows-1252"] {
            refusedQuickly(Array("<?xml version=\"1.0\" encoding=\"\(declared)\"?><a/>".utf8), saying: "encoding=\"\(declared)\"")
            refusedQuickly(Array("\u{FEFF}<?xml version='1.0' encoding = '\(declared)' ?><a/>".utf8), saying: "encoding=\"\(declared)\"")
        }
        for fine in ["<?xml version=\"1.0\" encoding=\"UTF-8\"?><a/>", "<?xml version=\"1.0\" encoding=\"utf8\"?><a/>", "<?xml version=\"1.0\"?><a/>"] {
            #expect(XMLDocumentReader.declaredEncoding(Array(fine.utf8)).map { ["utf-8", "utf8"].contains($0.lowercased()) } ?? true)
        }
    }
}
