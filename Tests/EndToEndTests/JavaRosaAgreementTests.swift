import Foundation
import FoundationXML
import Testing
import SurveyDomain

/// The server's checks against JavaRosa's, the engine ODK Collect runs: every form published here
/// (the corpus of XLSForms, and small forms made for this test — decimals of every size, a
/// geopoint, integers near 2^31, constraints, required, relevance, a counted repeat, filtered
/// choices) is downloaded through the OpenRosa door as Collect downloads it; JavaRosa fills
/// instances of it as Collect does, from a fixed seed, and writes them with its own serializer
/// (decimals as `1.5E7` and `5.0E-4`), then breaks copies of them on purpose (a constraint, a
/// required answer, a choice not offered or filtered out, an integer beyond 32 bits, a repeat
/// count lowered below its instances or an instance missing, an answer in a question that is not
/// relevant). JavaRosa judges each instance as Collect's finalization does, and each is sent
/// through the door: an instance JavaRosa finds valid must be accepted (201); one it finds
/// invalid must be refused (422, 1002), naming the question JavaRosa stops at.
@Suite struct JavaRosaAgreementTests {
    static let xlsx = FormPublishingTests.xlsx

    /// The forms published (fixtures in Tests/SurveyXFormTests/Fixtures that need no attachment;
    /// the agreement_* ones are make_agreement_forms.py's), one as its XForm.
    static let forms: [(file: String, contentType: String)] = [
        ("simple.xlsx", xlsx), ("household.xlsx", xlsx), ("health_facility.xlsx", xlsx), ("water_point.xlsx", xlsx),
        ("every_column.xlsx", xlsx), ("agreement_numbers.xlsx", xlsx), ("agreement_roster.xlsx", xlsx),
        ("agreement_filtered.xml", "application/xml"),
        // Real forms that publish since the definition carries what the device does (RealFormsCorpusTests).
        ("corpus/surveys/household_roster.xlsx", xlsx), ("corpus/surveys/dynamic_defaults.xlsx", xlsx),
        ("corpus/surveys/every_widget.xlsx", xlsx), ("corpus/surveys/cascading_duplicates.xlsx", xlsx),
        ("corpus/surveys/osm_buildings.xlsx", xlsx),
        ("corpus/pyxform/choice_filter_test.xlsx", xlsx), ("corpus/pyxform/calculate.xls", FormPublishingTests.xls),
        ("corpus/pyxform/hidden.xls", FormPublishingTests.xls), ("corpus/pyxform/default_time_demo.xls", FormPublishingTests.xls),
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
        let f = try Fixture()
        let collect = CollectClient(f)
        #expect(try collect.probe().status == 204)
        var instances = 0, valid = 0, scientific = 0
        var kinds: Set<String> = []
        var disagreements: [Disagreement] = []
        for (file, contentType) in Self.forms {
            let xform = try publishAndDownload(f, file, contentType: contentType)
            try judge.load(file, xform: xform)
            let (instancesBefore, validBefore, disagreementsBefore) = (instances, valid, disagreements.count)
            defer {
                print("  \(file): \(instances - instancesBefore) instances (\(valid - validBefore) valid in JavaRosa),"
                      + " \(disagreements.count - disagreementsBefore) disagreements")
            }
            for instance in try judge.fill(file, seed: Self.seed, count: Self.fillsPerForm) {
                let verdict = try judge.judge(file, instance: instance.xml)
                let reply = try collect.submit(instance.xml)
                let message = OpenRosaTests.message(reply)
                instances += 1
                if verdict.valid { valid += 1 }
                if verdict.valid, String(decoding: instance.xml, as: UTF8.self).contains(/[0-9]E-?[0-9]/) { scientific += 1 }
                if instance.label.hasPrefix("#"), let kind = instance.label.split(separator: ": ").dropFirst().first { kinds.insert(String(kind)) }
                let agrees: Bool
                if let first = verdict.failures.first {
                    agrees = reply.status == 422 && reply.header("surveyd-error-code") == "1002" && Self.names(message, first.path)
                } else {
                    agrees = reply.status == 201
                }
                if !agrees {
                    let named = verdict.valid ? Self.paths(in: message) : Self.paths(in: message) + verdict.failures.map(\.path)
                    disagreements.append(Disagreement(form: file, label: instance.label, verdict: verdict, status: reply.status,
                                                      code: reply.header("surveyd-error-code"), message: message,
                                                      values: Self.values(in: instance.xml, at: Array(Set(named)).sorted())))
                }
            }
        }
        print("JavaRosa and the door agree on \(instances - disagreements.count) of \(instances) instances across \(Self.forms.count) forms"
              + " (\(valid) valid in JavaRosa, \(scientific) of them with numbers in Java's scientific notation; \(instances - valid) invalid)")
        #expect(instances >= Self.forms.count * Self.fillsPerForm)
        #expect(Set(Self.kinds).subtracting(kinds).isEmpty, "no broken copies of these kinds: \(Set(Self.kinds).subtracting(kinds).sorted())")
        #expect(scientific > 0, "no valid instance carries a number as Java writes 1.5E7")
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(instances) instances:\n\(disagreements.map(\.description).joined(separator: "\n"))")
    }

    /// The fixture published to a survey of its own, then the form as Collect gets it: found in the
    /// form list by its formID and downloaded from its `downloadUrl`.
    func publishAndDownload(_ f: Fixture, _ file: String, contentType: String) throws -> [UInt8] {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(file)])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                             body: try FormPublishingTests.bytes(file), headers: ["Content-Type": contentType])
        #expect(published.status == 201, "\(file): \(published.text)")
        let formID = try #require(published.json?["xform"]?["formId"]?.stringValue, "\(file): \(published.text)")
        let collect = CollectClient(f)
        let listed = try #require(try collect.formList(formID: formID).forms.first, "\(file) is not in the form list as \(formID)")
        let download = try collect.download(listed)
        #expect(download.status == 200, "\(file): \(download.text)")
        #expect(listed.hash == "md5:" + Digest.md5Hex(download.body))
        return download.body
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
