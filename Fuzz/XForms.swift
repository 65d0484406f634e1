// ODK XForms as a publisher would upload them: libxml2's parse of untrusted bytes, the mapping
// onto a definition, the expressions rewritten from XPath. Properties: never a trap; a refusal
// says why; an accepted document's definition is one SurveyDefinition.parse accepts, and stays so
// through its canonical JSON; written back by XFormWriter, it reads back into itself (or the
// writer says why it cannot write it).
// fuzz-sources: Sources/SurveyXForm/*.swift
import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let json: JSONValue
    do {
        json = try XFormReader.definition(from: bytes)
    } catch {
        guard !error.message.isEmpty else { fatalError("a refusal without a message") }
        return 0
    }
    let definition: SurveyDefinition
    do {
        definition = try SurveyDefinition.parse(json)
    } catch {
        fatalError("accepted an XForm whose definition is refused: \(error.errors)")
    }
    guard !definition.nodes.isEmpty else { fatalError("accepted an XForm without nodes") }
    guard let again = try? JSONParser.parse(CanonicalJSON.encode(json)), again == json, (try? SurveyDefinition.parse(again)) == definition else {
        fatalError("the definition changed through its canonical JSON")
    }
    let written: [UInt8]
    do {
        written = try XFormWriter.xform(of: json, formId: "fuzz", version: "1")
    } catch {
        guard !error.message.isEmpty else { fatalError("an unwritable definition without a message") }
        return 0
    }
    let back: JSONValue
    do {
        back = try XFormReader.definition(from: written)
    } catch {
        fatalError("the reader refused the XForm written from an accepted definition: \(error.message)")
    }
    guard CanonicalJSON.encode(back) == CanonicalJSON.encode(json) else {
        fatalError("written and read back, the definition changed: \(CanonicalJSON.string(json)) → \(CanonicalJSON.string(back))")
    }
    return 0
}
