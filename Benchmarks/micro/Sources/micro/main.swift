import Foundation
import SurveyDomain

// Runs one operation of a submission's domain work N times on the benchmark's own body:
// `FIXTURES=Benchmarks/fixtures N=2000 micro OPERATION` (N defaults to 200000).
// Benchmarks/micro.sh runs it under callgrind at two N and reports instructions per operation,
// a count that does not move with the machine's load the way wall-clock time does.
let fixtures = ProcessInfo.processInfo.environment["FIXTURES"] ?? "Benchmarks/fixtures"
func fixture(_ name: String) -> String {
    guard let text = try? String(contentsOfFile: fixtures + "/" + name, encoding: .utf8) else {
        fatalError("cannot read \(fixtures)/\(name)")
    }
    return text
}
let body = Array(("{\"answers\":" + fixture("answers.json") + ",\"capturedAt\":\"2025-06-01T08:00:00Z\","
    + "\"clientSubmissionId\":\"0123abcd-sub-run-submit-1-1\",\"contentHash\":\"sha256:0\",\"surveyVersionId\":\"svr_1\"}").utf8)
let definition = try SurveyDefinition.parse(try JSONParser.parse(Array(fixture("survey.json").utf8)))
let parsed = try JSONParser.parse(body)
guard case .object(let members) = parsed, let answers = members["answers"] else { fatalError("fixture is not a submission") }
let encodedAnswers = CanonicalJSON.encode(answers)

// The two forms of Benchmarks/forms.sh (written by fixtures/make_forms.py into $FORMS).
let forms = ProcessInfo.processInfo.environment["FORMS"] ?? "/tmp/surveyd-bench/micro-forms"
func form(_ name: String) throws -> (definition: SurveyDefinition, body: [UInt8], answers: JSONValue) {
    guard let d = try? String(contentsOfFile: "\(forms)/\(name).json", encoding: .utf8),
          let a = try? String(contentsOfFile: "\(forms)/\(name)-answers.json", encoding: .utf8) else {
        fatalError("cannot read \(forms)/\(name).json (python3 Benchmarks/fixtures/make_forms.py \(forms))")
    }
    let body = Array(("{\"answers\":" + a + "}").utf8)
    return (try SurveyDefinition.parse(try JSONParser.parse(Array(d.utf8))), body, try JSONParser.parse(Array(a.utf8)))
}
let roster = try form("roster"), flat = try form("flat")

let operations: [String: () throws -> Int] = [
    "roster-validate": { roster.definition.validate(answers: roster.answers).errors.count },
    "flat-validate": { flat.definition.validate(answers: flat.answers).errors.count },
    "roster-parse": { if case .object(let o) = try JSONParser.parse(roster.body) { return o.count }; return 0 },
    "flat-parse": { if case .object(let o) = try JSONParser.parse(flat.body) { return o.count }; return 0 },
    "roster-canonical": { CanonicalJSON.encode(roster.answers).count },
    "flat-canonical": { CanonicalJSON.encode(flat.answers).count },
    "parse": { if case .object(let o) = try JSONParser.parse(body) { return o.count }; return 0 },
    "validate": { definition.validate(answers: answers).errors.count },
    "canonical": { CanonicalJSON.encode(answers).count },
    "digest": { Digest.sha256Hex(CanonicalJSON.encode(members, adding: "answers", encoded: encodedAnswers)).count },
    "sha256": { Digest.sha256(body).count },
    "scan": { ClientIdentifier.scan(body, key: "clientSubmissionId")?.count ?? 0 },
]
guard CommandLine.arguments.count == 2, let operation = operations[CommandLine.arguments[1]] else {
    print("usage: micro \(operations.keys.sorted().joined(separator: "|"))")
    exit(2)
}
let n = Int(ProcessInfo.processInfo.environment["N"] ?? "") ?? 200_000
var sink = 0
for _ in 0..<n { sink &+= try operation() }
print(sink)
