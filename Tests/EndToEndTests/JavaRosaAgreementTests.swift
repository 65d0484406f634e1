import Foundation
import FoundationXML
import Testing
import SurveyDomain

/// The server's checks against JavaRosa's, the engine ODK Collect runs: every form the end-to-end
/// tests publish to the OpenRosa door is published here — the corpus of XLSForms, the forms that
/// name files (published as multipart with their CSV files and images), the JSON definitions
/// whose XForm surveyd writes itself, and small forms made for this test (decimals of every size,
/// a geopoint, integers near 2^31, constraints, required, relevance, a counted repeat, filtered
/// choices) — and is downloaded through the door as Collect downloads it, with the files of its
/// manifest. JavaRosa fills instances of it as Collect does, from a fixed seed (reading a CSV
/// file's choices with its own parser, pulldata() answered from the file as Collect answers it,
/// a file question given a file of a type it accepts, sent as a part), and writes them with its
/// own serializer (decimals as `1.5E7` and `5.0E-4`), then breaks copies of them on purpose (a
/// constraint, a required answer, a choice not offered or filtered out, an integer beyond 32
/// bits, a repeat count lowered below its instances or an instance missing, an answer in a
/// question that is not relevant). JavaRosa judges each instance as Collect's finalization does,
/// and each is sent through the door: an instance JavaRosa finds valid must be accepted (201);
/// one it finds invalid must be refused (422, 1002), naming the question JavaRosa stops at.
///
/// A JSON definition's question bounds (`minimum`, `maximum`, `maxLength`) are part of the
/// constraint surveyd writes in its XForm, so JavaRosa checks them. A repeat's `minCount` and
/// `maxCount` have no place in an XForm and are written in surveyd's namespace, which Collect
/// ignores: Collect finalizes an instance beyond them and the door refuses it. The judge checks
/// those after JavaRosa (a failure's reason starts `surveyd:`), so such an instance must be
/// refused naming that repeat, and the summary counts them apart.
@Suite struct JavaRosaAgreementTests {
    static let xlsx = FormPublishingTests.xlsx

    /// A form as an end-to-end test publishes it.
    enum Source {
        /// A fixture of Tests/SurveyXFormTests/Fixtures as the body (XLSForm or XForm).
        case fixture(String, contentType: String)
        /// Bytes as the body.
        case body([UInt8], contentType: String)
        /// A fixture sent as the part `form` of a multipart body, with the files it names.
        case withFiles(String, [(name: String, bytes: [UInt8])])
        /// A JSON definition: surveyd writes its XForm.
        case definition(JSONValue)
        /// A JSON definition sent as the part `form`, with the files it names.
        case definitionWithFiles(JSONValue, [(name: String, bytes: [UInt8])])
    }

    /// The prices pulldata.xlsx looks up (the fixtures have no prices.csv: made for this test).
    static let prices = Array("code,price\nA1,12.5\nB2,7\nC3,1.5E7\n".utf8)

    /// Every form the end-to-end tests publish to the door (the agreement_* ones are
    /// make_agreement_forms.py's), each in an organization of its own (two share a form id).
    /// Forms published only to be refused are not: they never reach the door.
    static let forms: [(name: String, source: Source)] = [
        ("simple.xlsx", .fixture("simple.xlsx", contentType: xlsx)), ("household.xlsx", .fixture("household.xlsx", contentType: xlsx)),
        ("health_facility.xlsx", .fixture("health_facility.xlsx", contentType: xlsx)),
        ("water_point.xlsx", .fixture("water_point.xlsx", contentType: xlsx)), ("every_column.xlsx", .fixture("every_column.xlsx", contentType: xlsx)),
        ("agreement_numbers.xlsx", .fixture("agreement_numbers.xlsx", contentType: xlsx)),
        ("agreement_roster.xlsx", .fixture("agreement_roster.xlsx", contentType: xlsx)),
        ("agreement_filtered.xml", .fixture("agreement_filtered.xml", contentType: "application/xml")),
        ("census (PublishingRefusalTests)", .body((try? PublishingRefusalTests.xlsform([["integer", "people", "People"]])) ?? [], contentType: xlsx)),
        ("PublishingRefusalTests.sharedFormXForm", .body(Array(PublishingRefusalTests.sharedFormXForm.utf8), contentType: "application/xml")),
        ("OpenRosaDoorSafetyTests.scriptedXForm", .body(Array(OpenRosaDoorSafetyTests.scriptedXForm.utf8), contentType: "application/xml")),
        // With files: CSV choices (one file `;`-separated with a byte order mark), pulldata(), images.
        // (csv_choices, pulldata and media_label reach the server elsewhere only without their
        // files, to be refused; here they are published with them.)
        ("village_visit.xlsx", .withFiles("village_visit.xlsx", [("villages.csv", FormAttachmentTests.villages),
                                                                 ("crops.csv", FormAttachmentTests.crops), ("map.png", FormAttachmentTests.map)])),
        ("csv_choices.xlsx", .withFiles("csv_choices.xlsx", [("villages.csv", FormAttachmentTests.villages)])),
        ("pulldata.xlsx", .withFiles("pulldata.xlsx", [("prices.csv", prices)])),
        ("media_label.xlsx", .withFiles("media_label.xlsx", [("face.png", FormAttachmentTests.map)])),
        ("FormAttachmentTests.visitDefinition", .definitionWithFiles(FormAttachmentTests.visitDefinition,
                                                                      [("villages.csv", FormAttachmentTests.villages), ("map.png", FormAttachmentTests.map)])),
        // JSON definitions.
        ("FormLogicTests.roster", .definition(FormLogicTests.roster)), ("Fixture.definition", .definition(Fixture.definition)),
        ("OpenRosaTests.photos", .definition(OpenRosaTests.photos)),
        ("OpenRosaDoorSafetyTests.measures", .definition(OpenRosaDoorSafetyTests.measures)),
        ("OpenRosaDoorSafetyTests.household", .definition(OpenRosaDoorSafetyTests.household)),
        ("OpenRosaDoorSafetyTests.pump", .definition(OpenRosaDoorSafetyTests.pump)),
        // Real forms that publish since the definition carries what the device does (RealFormsCorpusTests).
        ("corpus/surveys/household_roster.xlsx", .fixture("corpus/surveys/household_roster.xlsx", contentType: xlsx)),
        ("corpus/surveys/dynamic_defaults.xlsx", .fixture("corpus/surveys/dynamic_defaults.xlsx", contentType: xlsx)),
        ("corpus/surveys/every_widget.xlsx", .fixture("corpus/surveys/every_widget.xlsx", contentType: xlsx)),
        ("corpus/surveys/cascading_duplicates.xlsx", .fixture("corpus/surveys/cascading_duplicates.xlsx", contentType: xlsx)),
        ("corpus/surveys/osm_buildings.xlsx", .fixture("corpus/surveys/osm_buildings.xlsx", contentType: xlsx)),
        ("corpus/surveys/repeated_names.xlsx", .fixture("corpus/surveys/repeated_names.xlsx", contentType: xlsx)),
        ("corpus/pyxform/simple_loop.xls", .fixture("corpus/pyxform/simple_loop.xls", contentType: FormPublishingTests.xls)),
        ("corpus/pyxform/choice_filter_test.xlsx", .fixture("corpus/pyxform/choice_filter_test.xlsx", contentType: xlsx)),
        ("corpus/pyxform/calculate.xls", .fixture("corpus/pyxform/calculate.xls", contentType: FormPublishingTests.xls)),
        ("corpus/pyxform/hidden.xls", .fixture("corpus/pyxform/hidden.xls", contentType: FormPublishingTests.xls)),
        ("corpus/pyxform/default_time_demo.xls", .fixture("corpus/pyxform/default_time_demo.xls", contentType: FormPublishingTests.xls)),
    ]
    static let seed = 20_260_101
    /// Instances filled per form; each brings up to ten broken copies.
    static let fillsPerForm = 12

    /// The kinds of broken copies (`#3: <kind>: …`): every one must come up across the forms.
    static let kinds = ["constraint broken", "required left empty", "choice not offered", "choice outside its filter",
                        "integer beyond 32 bits", "integer written as a decimal", "repeat above a lowered count",
                        "repeat below its count", "answer in a question that is not relevant"]

    /// One instance that JavaRosa and the door see differently.
    struct Disagreement: CustomStringConvertible {
        let form: String
        let label: String
        let verdict: JavaRosaJudge.Verdict
        let status: Int
        let code: String?
        let message: String
        /// The values the instance carries at the paths the door names.
        let values: [(String, String)]

        var description: String {
            let javaRosa = verdict.valid ? "valid" : "invalid at " + verdict.failures.map(\.description).joined(separator: "; ")
            let sent = values.map { "\($0.0) = \($0.1)" }.joined(separator: ", ")
            return "\(form) — \(label)\n    JavaRosa: \(javaRosa)\n    the door: \(status)\(code.map { " (\($0))" } ?? "") \(message)"
                + (sent.isEmpty ? "" : "\n    sent: \(sent)")
        }
    }

    @Test func javaRosaAndTheDoorAgreeOnEveryInstance() throws {
        let judge = try JavaRosaJudge.shared()
        let server = try Fixture()
        var instances = 0, valid = 0, scientific = 0, files = 0, surveydOnly = 0
        var kinds: Set<String> = []
        var disagreements: [Disagreement] = []
        for (name, source) in Self.forms {
            // An organization of its own: a form id names one survey of an organization.
            let f = try Fixture(server: server.server)
            let collect = CollectClient(f)
            #expect(try collect.probe().status == 204)
            let (xform, media, definition) = try publishAndDownload(f, name, source)
            try judge.load(name, xform: xform, files: media)
            let (instancesBefore, validBefore, disagreementsBefore) = (instances, valid, disagreements.count)
            defer {
                print("  \(name): \(instances - instancesBefore) instances (\(valid - validBefore) valid in JavaRosa),"
                      + " \(disagreements.count - disagreementsBefore) disagreements")
            }
            for instance in try judge.fill(name, seed: Self.seed, count: Self.fillsPerForm) {
                let verdict = try judge.judge(name, instance: instance.xml)
                // The files the instance names, sent beside it as Collect sends them.
                let parts = instance.files.map { file in
                    file.hasSuffix(".png") ? CollectClient.File(name: file, contentType: "image/png", bytes: Files.png(1_500))
                        : CollectClient.File(name: file, contentType: "image/jpeg", bytes: Files.jpeg(2_500, seed: UInt8(truncatingIfNeeded: file.hashValue)))
                }
                files += parts.count
                let reply = try collect.submit(instance.xml, files: parts)
                let message = OpenRosaTests.message(reply)
                instances += 1
                // Valid in JavaRosa: no failure but the definition's rules in surveyd's namespace.
                let javaRosaValid = verdict.failures.allSatisfy { $0.reason.hasPrefix("surveyd:") }
                if javaRosaValid { valid += 1 }
                if javaRosaValid, !verdict.valid { surveydOnly += 1 }
                if javaRosaValid, String(decoding: instance.xml, as: UTF8.self).contains(/[0-9]E-?[0-9]/) { scientific += 1 }
                if instance.label.hasPrefix("#"), let kind = instance.label.split(separator: ": ").dropFirst().first { kinds.insert(String(kind)) }
                let agrees: Bool
                if let first = verdict.failures.first {
                    // JavaRosa names the answer by the form's names; the door by the definition's ids.
                    let path = Self.answerPath(of: first.question, in: definition) ?? first.path
                    agrees = reply.status == 422 && reply.header("surveyd-error-code") == "1002" && Self.names(message, path)
                } else {
                    agrees = reply.status == 201
                }
                if !agrees {
                    let named = verdict.valid ? Self.paths(in: message) : Self.paths(in: message) + verdict.failures.map(\.path)
                    disagreements.append(Disagreement(form: name, label: instance.label, verdict: verdict, status: reply.status,
                                                      code: reply.header("surveyd-error-code"), message: message,
                                                      values: Self.values(in: instance.xml, at: Array(Set(named)).sorted())))
                }
            }
        }
        print("JavaRosa and the door agree on \(instances - disagreements.count) of \(instances) instances across \(Self.forms.count) forms"
              + " (\(valid) valid in JavaRosa, \(scientific) of them with numbers in Java's scientific notation, \(surveydOnly) of them"
              + " refused by a rule of the definition in surveyd's namespace, which Collect does not see; \(instances - valid) invalid;"
              + " \(files) files sent)")
        #expect(instances >= Self.forms.count * Self.fillsPerForm)
        #expect(files > 0, "no instance named a file")
        #expect(Set(Self.kinds).subtracting(kinds).isEmpty, "no broken copies of these kinds: \(Set(Self.kinds).subtracting(kinds).sorted())")
        #expect(scientific > 0, "no valid instance carries a number as Java writes 1.5E7")
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(instances) instances:\n\(disagreements.map(\.description).joined(separator: "\n"))")
    }

    /// The form published to a survey of its own as its test publishes it, then the form as Collect
    /// gets it: found in the form list by its formID, downloaded from its `downloadUrl`, its files
    /// from its manifest.
    func publishAndDownload(_ f: Fixture, _ name: String, _ source: Source) throws -> ([UInt8], [(name: String, bytes: [UInt8])], JSONValue) {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(name)])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
        let versions = "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions"
        func multipart(_ form: FormAttachmentTests.Part, _ files: [(name: String, bytes: [UInt8])]) throws -> Reply {
            let (body, contentType) = FormAttachmentTests.multipart([form] + files.map { FormAttachmentTests.file($0.name, $0.bytes) })
            return try f.client.request("POST", versions, token: f.adminToken, body: body, headers: ["Content-Type": contentType])
        }
        let published: Reply
        var sent: [(name: String, bytes: [UInt8])] = []
        switch source {
        case let .fixture(file, contentType):
            published = try f.client.request("POST", versions, token: f.adminToken, body: try FormPublishingTests.bytes(file),
                                             headers: ["Content-Type": contentType])
        case let .body(bytes, contentType):
            published = try f.client.request("POST", versions, token: f.adminToken, body: bytes, headers: ["Content-Type": contentType])
        case let .withFiles(file, files):
            sent = files
            published = try multipart(FormAttachmentTests.Part(field: "form", fileName: file, contentType: "application/octet-stream",
                                                               bytes: try FormPublishingTests.bytes(file)), files)
        case let .definition(definition):
            published = try f.client.post(versions, token: f.adminToken, ["definition": definition])
        case let .definitionWithFiles(definition, files):
            sent = files
            published = try multipart(FormAttachmentTests.Part(field: "form", fileName: "form.json", contentType: "application/json",
                                                               bytes: CanonicalJSON.encode(["definition": definition])), files)
        }
        #expect(published.status == 201, "\(name): \(published.text)")
        let formID = try #require(published.json?["xform"]?["formId"]?.stringValue ?? published.json?["formId"]?.stringValue
                                      ?? (try CollectClient(f).formList().forms.first?.formID), "\(name): \(published.text)")
        let collect = CollectClient(f)
        let listed = try #require(try collect.formList(formID: formID).forms.first, "\(name) is not in the form list as \(formID)")
        let download = try collect.download(listed)
        #expect(download.status == 200, "\(name): \(download.text)")
        #expect(listed.hash == "md5:" + Digest.md5Hex(download.body))
        let media = try collect.mediaFiles(listed)
        #expect(media.map(\.name).sorted() == sent.map(\.name).sorted(), "\(name): the manifest lists \(media.map(\.name))")
        for file in sent { #expect(media.first { $0.name == file.name }?.bytes == file.bytes, "\(name): \(file.name)") }
        return (download.body, media, published.json?["definition"] ?? .null)
    }

    /// The answer's path the door names for the question at `xpath` (`/data/boys/count`,
    /// `/data/people[2]/age`), found by the elements' names in the published definition (a
    /// node's `name`, else its id): groups unwrap, a node is its id, a repeat's instance counted
    /// from 0 (`boys_count`, `people[1].age`). Nil where the definition has no such node.
    static func answerPath(of xpath: String, in definition: JSONValue) -> String? {
        var nodes = definition["questions"]?.arrayValue ?? []
        var steps: [String] = []
        for step in xpath.split(separator: "/").dropFirst() {
            var name = String(step), index: Int?
            if let open = step.firstIndex(of: "["), step.hasSuffix("]") {
                name = String(step[..<open])
                index = Int(step[step.index(after: open)..<step.index(before: step.endIndex)])
            }
            guard let node = nodes.first(where: { ($0["name"]?.stringValue ?? $0["id"]?.stringValue) == name }),
                  let id = node["id"]?.stringValue else { return nil }
            switch node["type"]?.stringValue {
            case "group": break
            case "repeat": steps.append(index.map { "\(id)[\($0 - 1)]" } ?? id)
            default: steps.append(id)
            }
            nodes = node["children"]?.arrayValue ?? []
        }
        return steps.joined(separator: ".")
    }

    static let path = #"[A-Za-z_][A-Za-z0-9_.\-]*(?:\[\d+\])?(?:\.[A-Za-z_][A-Za-z0-9_\-]*(?:\[\d+\])?)*"#

    /// Whether the door's message names `path` as one of the answers it refuses
    /// (`…send it again: people[0].age: must be…; size: required.`).
    static func names(_ message: String, _ path: String) -> Bool {
        paths(in: message).contains(path)
    }

    /// The answers' paths a refusal's message lists, each followed by ": " after the message's
    /// opening or a "; ".
    static func paths(in message: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: "(?:: |; )(" + path + "): ") else { return [] }
        let range = NSRange(message.startIndex..., in: message)
        return expression.matches(in: message, range: range).compactMap { match in
            Range(match.range(at: 1), in: message).map { String(message[$0]) }
        }
    }

    /// The text of the elements at answer paths (`people[1].age`: groups unwrap, a repeat's
    /// instances counted from 0), for the report of a disagreement.
    static func values(in xml: [UInt8], at paths: [String]) -> [(String, String)] {
        guard let document = try? XMLDocument(data: Data(xml)), let root = document.rootElement() else { return [] }
        return paths.compactMap { path in
            var element: XMLElement? = root
            var found: [XMLNode] = []
            for step in path.split(separator: ".") {
                var name = String(step), index = 0
                if let open = step.firstIndex(of: "["), step.hasSuffix("]") {
                    name = String(step[..<open])
                    index = Int(step[step.index(after: open)..<step.index(before: step.endIndex)]) ?? 0
                }
                found = (try? element?.nodes(forXPath: ".//*[local-name()='\(name)']")) ?? []
                element = found.indices.contains(index) ? found[index] as? XMLElement : nil
            }
            guard let element else { return (path, "(absent)") }
            // A repeat: how many instances were sent.
            if element.children?.contains(where: { $0.kind == .element }) == true { return (path, "\(found.count) instances") }
            return (path, element.stringValue ?? "")
        }
    }
}
