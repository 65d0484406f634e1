import SurveyDomain
import SurveyForms
import SurveyOperations
import SurveyStorage

/// `GET …/submissions/{instanceId}/attachments`, which pyodk calls after every create. This door
/// takes submissions that name no files, and their list is empty; a response whose answers name
/// a file (stored through another door) is answered 501 / 1050 rather than with a list that
/// could be wrong, naming where its files are read.
enum CentralAttachments {
    /// Whether any answer of `response` to a file question (anywhere, repeats included) is set.
    static func namesFiles(_ response: ResponseRecord, definition: SurveyDefinition) -> Bool {
        var fileIds: Set<String> = []
        var stack = definition.nodes
        while let n = stack.popLast() {
            switch n.kind {
            case .question(let q): if q.type == .file { fileIds.insert(q.id) }
            case .group, .repeat: stack += n.children
            case .note: break
            }
        }
        guard !fileIds.isEmpty else { return false }
        // Unreadable answers are treated as naming files: never an empty list that may be wrong.
        guard let answers = try? JSONParser.parse(Array(response.answers.utf8)) else { return true }
        var values = [answers]
        while let v = values.popLast() {
            switch v {
            case .object(let o):
                for (k, x) in o {
                    if fileIds.contains(k), x != .null { return true }
                    values.append(x)
                }
            case .array(let a): values += a
            default: break
            }
        }
        return false
    }

    static func notOffered(_ response: ResponseRecord) -> ApiError {
        ApiError(.notOffered, "This submission's files are not listed through ODK Central's API yet: read them through /v1/orgs/\(response.orgId)/responses/\(response.responseId) and the export's zip.")
    }
}
