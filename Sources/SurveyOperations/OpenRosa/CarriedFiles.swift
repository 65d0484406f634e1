import SurveyDomain
import SurveyStorage

/// The files an edit keeps: ODK Central's clients edit a submission with an instance that names
/// its files as before (`<photo>pump.jpg</photo>`) and send no bytes for them. Each file name the
/// edited instance gives that the response's current answers have is bound to that very upload,
/// so the edit keeps the file instead of waiting for bytes that will never come.
struct CarriedFiles {
    /// The response's uploads by the name their sender gave them.
    let byName: [String: String]

    init(of target: ResponseRecord, currentInstanceId: String, names: [String], in db: ReadContext) throws {
        var byName: [String: String] = [:]
        for id in Uploads.citedIds(in: (try? JSONParser.parse(Array(target.answers.utf8))) ?? .null) {
            guard let u = try db.upload(orgId: target.orgId, clientUploadId: id) else { continue }
            if let name = u.fileName {
                byName[name] = id
            } else if let name = names.first(where: { OpenRosaForms.clientUploadId(instanceID: currentInstanceId, fileName: $0) == id
                                                || OpenRosaForms.clientUploadId(instanceID: target.clientSubmissionId, fileName: $0) == id }) {
                // An upload stored before uploads kept their names: its id says which name it was.
                byName[name] = id
            }
        }
        self.byName = byName
    }

    /// `answers` with each file answer the instance `instanceID` names by a kept file's name
    /// citing that file's upload. `missing`: the names it gives that the response has no file of.
    func apply(to answers: JSONValue, instanceID: String, names: [String]) -> (answers: JSONValue, missing: [String]) {
        var replaced: [String: String] = [:], missing: [String] = []
        for name in names {
            if let kept = byName[name] { replaced[OpenRosaForms.clientUploadId(instanceID: instanceID, fileName: name)] = kept } else { missing.append(name) }
        }
        return (Self.replacing(replaced, in: answers), missing)
    }

    static func replacing(_ ids: [String: String], in value: JSONValue) -> JSONValue {
        guard !ids.isEmpty else { return value }
        switch value {
        case .object(let o):
            if case .string(let id)? = o["clientUploadId"], o.count == 1 { return ["clientUploadId": .string(ids[id] ?? id)] }
            return .object(o.mapValues { replacing(ids, in: $0) })
        case .array(let a): return .array(a.map { replacing(ids, in: $0) })
        default: return value
        }
    }
}
