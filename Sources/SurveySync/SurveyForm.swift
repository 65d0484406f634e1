import Foundation
import SurveyForms

/// A survey version as the app downloaded it (the `definition` of its version document), read
/// and checked with the server's own code (`SurveyForms`): `check` refuses exactly what the
/// server would refuse, at the same paths with the same messages, so a collector can correct an
/// answer before the work leaves the device. Logic that reads the moment or the device
/// (`today()`, `now()`, …) is enforced by neither, and a file answer's upload is the server's to see.
public struct SurveyForm: Sendable {
    private let definition: SurveyDefinition

    /// `definition`: the JSON object of the version's `definition`, as the server answered it.
    public init(definition json: Data) throws(OutboxError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse([UInt8](json))
        } catch {
            throw .invalidCapture("the survey's definition is not JSON")
        }
        do {
            definition = try SurveyDefinition.parse(value)
        } catch {
            let first = error.errors.first.map { "\($0.path): \($0.message)" } ?? "no reason given"
            throw .invalidCapture("the survey's definition is not one the server publishes (\(first))")
        }
    }

    /// Every answer the server would refuse, in the server's order (an empty list: nothing to
    /// correct). `answers` is what `Outbox.captureResponse` takes.
    public func check(_ answers: [String: any Sendable]) -> [AnswerProblem] {
        guard let value = Self.json(answers) else { return [AnswerProblem(path: "answers", message: "must be a JSON object")] }
        return definition.validate(answers: value).errors.map { AnswerProblem(path: $0.path, message: $0.message) }
    }

    /// The paths of the questions, groups and repeats that are not relevant with these answers:
    /// what the app does not show (and whose answers the server would refuse).
    public func notRelevant(_ answers: [String: any Sendable]) -> Set<String> {
        Self.json(answers).map(definition.notRelevant) ?? []
    }

    /// What a response with these answers and this `entity:` argument does to the form's entity
    /// list, as the phone shows it until the server's copy does: the properties are the answers
    /// the form saves to them, written as the server writes them. nil when the form has no entity
    /// or the argument neither creates nor updates one.
    func entityChange(_ entity: [String: any Sendable], answers: [String: any Sendable]) -> CapturedEntityChange? {
        guard let declaration = definition.entity, let e = Self.json(entity), let values = Self.json(answers),
              let id = e["id"]?.stringValue else { return nil }
        let create = e["create"]?.boolValue ?? false, update = e["update"]?.boolValue ?? false
        guard create || update else { return nil }
        var properties: [String: String] = [:]
        for s in declaration.saveTo {
            if let value = values[s.questionId], let text = EntityDeclaration.propertyText(value) { properties[s.property] = text }
        }
        return CapturedEntityChange(list: declaration.list, id: id, create: create, update: update, label: e["label"]?.stringValue,
                                    properties: properties, baseVersion: e["baseVersion"]?.intValue,
                                    trunkVersion: e["trunkVersion"]?.intValue, branchId: e["branchId"]?.stringValue)
    }

    /// Through JSON text, so that numbers, booleans and nesting read exactly as the server reads a body.
    private static func json(_ answers: [String: any Sendable]) -> JSONValue? {
        guard JSONSerialization.isValidJSONObject(answers),
              let text = try? JSONSerialization.data(withJSONObject: answers, options: [.sortedKeys]) else { return nil }
        return try? JSONParser.parse([UInt8](text))
    }
}

/// One answer the server would refuse: where (`answers.<id>`, inside a repeat
/// `answers.<repeatId>[<index>].<id>`) and why, and the sentence to show a person — the one a
/// refusal from the server shows.
public struct AnswerProblem: Sendable, Equatable {
    public let path: String
    public let message: String

    public var sentence: String { SyncWords.field(Problem.FieldError(path: path, message: message)) }
}
