// A 50,000-row CSV choice list with a pulldata() table read into a definition, checked and
// encoded as publishing does, then 10,000 answers checked against it (the choice, its filter over
// a CSV column, and a pulldata() constraint). Built with -O by Benchmarks/choice_lists.sh.
import SurveyForms

let rows = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 50_000
var csv = "name,label,district,population\n"
for i in 0..<rows { csv += "v\(i),Village \(i),\(i % 2 == 0 ? "north" : "south"),\(100 + i % 900)\n" }
let bytes = Array(csv.utf8)
let definition: JSONValue = ["title": "Village visit", "questions": [
    ["id": "district", "type": "select_one", "label": "District", "choices": ["north", "south"]],
    ["id": "village", "type": "select_one", "label": "Village", "choiceList": "villages.csv", "choiceFilter": "district = ${district}"],
    ["id": "households", "type": "integer", "label": "Households", "constraint": ". <= pulldata('villages', 'population', 'name', ${village})"],
]]
let clock = ContinuousClock()
func best(_ rounds: Int = 5, _ body: () throws -> Void) rethrows -> Duration {
    var fastest = Duration.seconds(3600)
    for _ in 0..<rounds { fastest = min(fastest, try clock.measure(body)) }
    return fastest
}
var resolved: JSONValue = .null
let read = try best { resolved = try FormAttachments.resolve(definition, sent: ["villages.csv"]) { _ in bytes } }
var parsed: SurveyDefinition?
let parse = try best { parsed = try SurveyDefinition.parse(resolved) }
var encoded: [UInt8] = []
let encode = best { encoded = CanonicalJSON.encode(resolved) }
guard let form = parsed else { fatalError("not parsed") }
var valid = 0
let checks = best {
    valid = 0
    for i in 0..<10_000 {
        let n = (i * 7) % rows
        let answers: JSONValue = ["district": n % 2 == 0 ? "north" : "south", "village": .string("v\(n)"), "households": 50]
        if form.validate(answers: answers).isValid { valid += 1 }
    }
}
print("\(rows) rows, \(bytes.count) bytes of CSV, \(encoded.count) bytes of definition")
print("read into the definition (CSV, choices, table): \(read)")
print("definition checked and indexed: \(parse)")
print("definition encoded (canonical JSON): \(encode)")
print("10,000 answers checked: \(checks) (\(valid) valid), \(checks / 10_000) each")
