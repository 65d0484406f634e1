import SurveyDomain
import SurveyStorage
import SurveyXForm

/// ODK's edit of a sent form: a new instance whose `meta/deprecatedID` names the instanceID it
/// replaces. It is the edit operation of `Reviews.edit` — the same transaction (the new version,
/// the state `edited`, the revision, one `response.edit` audit entry and its event) — made by the
/// response's own collector, keyed by the new instance's instanceID, which becomes the current one.
public struct OpenRosaEdit: Sendable {
    let operations: Operations

    public enum Outcome: Sendable {
        /// The instance names no `deprecatedID` after all: a submission like any other.
        case notAnEdit
        case edited(ResponseRecord)
        /// This very edit was made before (the same instanceID and answers): nothing changes.
        case replayed(ResponseRecord)
    }

    /// Whether an instance's bytes may carry `meta/deprecatedID` (a cheap look before any parse:
    /// a plain submission never pays for reading it twice).
    public static func mayBeAnEdit(_ xml: [UInt8]) -> Bool {
        SubmittedInstance.mayName("deprecatedID", xml)
    }

    /// The contract's order: the app token's collector (403), the instance read (400, 1032, 404
    /// for a form not published here), the response `deprecatedID` names — the collector's own,
    /// else the 404 of nothing — then the replay (the new instanceID already made this edit: the
    /// same answers are its replay, others 1004), then the checks: the response's own survey
    /// version, the answers (1002), `deprecatedID` the current instanceID (1021, with the
    /// current state), and the gate (1001); the edit commits in one transaction.
    /// `files`: the files its POST carried, received before anything was read; each bound in the
    /// edit's snapshot to the question naming it and stored as an upload with the edit, or not at all.
    public func edit(orgId: String, appToken: String, xml: [UInt8], files: [ReceivedFile] = []) throws -> Outcome {
        let ops = operations
        return try edit(orgId: orgId, xml: xml, files: files, caller: { db in
            let caller = try OpenRosaSubmissionDoor.collector(appToken: appToken, orgId: orgId, in: db, operations: ops)
            return try ops.admit(caller, to: Submissions.access, orgId: orgId, in: db).member()
        }, may: { user, target in target.submitter == user.userId }, takesFiles: true)
    }

    /// ODK Central's `PUT …/forms/{xmlFormId}/submissions/{instanceId}`: the same edit by a
    /// reviewer, an admin or the submitter (anyone else: the 404 of nothing), of the submission
    /// the path names (its first instanceID), with an instance of the path's form.
    public func edit(orgId: String, by user: UserRecord, xmlFormId: String, instanceId: String, xml: [UInt8]) throws -> Outcome {
        try edit(orgId: orgId, xml: xml, files: [], caller: { _ in user }, may: { user, target in
            (user.has(.reviewer) || user.has(.admin) || target.submitter == user.userId) && target.clientSubmissionId == instanceId
        }, formId: xmlFormId, editorsSee: "the submission \(instanceId)")
    }

    private func edit(orgId: String, xml: [UInt8], files: [ReceivedFile], caller: (ReadContext) throws -> UserRecord,
                      may: (UserRecord, ResponseRecord) -> Bool, takesFiles: Bool = false, formId: String? = nil,
                      editorsSee: String? = nil) throws -> Outcome {
        let ops = operations
        let (user, arrival, staged) = try ops.database.read { db in
            let user = try caller(db)
            let arrival = try OpenRosaArrival.read(xml, orgId: orgId, in: db, operations: ops)
            return (user, arrival, files.isEmpty ? [] : try arrival.stage(files, submitter: user.userId, in: db, operations: ops))
        }
        if let formId, arrival.formId != formId {
            throw ApiError.malformed("The submission is of the form \(arrival.formId), not \(formId): put it to that form's submission.")
        }
        guard let deprecatedID = arrival.deprecatedID else {
            if let editorsSee { throw ApiError.malformed("The submission has no meta/deprecatedID: an edit of \(editorsSee) names the instanceID it replaces there.") }
            return .notAnEdit
        }
        let instanceID = arrival.instanceID
        let planned = try ops.database.read { db -> Planned in
            guard let target = try db.response(orgId: orgId, instanceId: deprecatedID), may(user, target) else {
                throw ApiError(.notFound, "No form with the instance ID \(deprecatedID) was received from you here, so this edit of it was not stored.")
            }
            // A door that carries no files (Central's PUT): the files it names as the response
            // has them are kept; a file the response does not have cannot come through it.
            var edited = arrival.submission.answers
            if !takesFiles, !arrival.files.isEmpty {
                let names = arrival.files.map(\.fileName)
                let carried = try CarriedFiles(of: target, currentInstanceId: deprecatedID, names: names, in: db)
                let (kept, missing) = carried.apply(to: edited, instanceID: instanceID, names: names)
                guard missing.isEmpty else {
                    throw ApiError(.notOffered, "An edit through this door keeps the submission's files but takes no new ones (\(missing.joined(separator: ", "))): the edit was not stored. Send it through the OpenRosa door, or edit its answers on the server.")
                }
                edited = kept
            }
            let answers = CanonicalJSON.string(edited)
            // 3. replay: this instanceID already made an edit, or is another submission's id.
            if let made = try db.responseVersion(orgId: orgId, instanceId: instanceID) {
                guard made.responseId == target.responseId, made.version.answers == answers else { throw Self.conflict }
                return .replayed(target)
            }
            if try db.response(orgId: orgId, clientSubmissionId: instanceID) != nil { throw Self.conflict }
            // 4. the edit itself.
            guard arrival.version.surveyVersionId == target.surveyVersionId else {
                throw ApiError(.validationFailed, "The edited form is of another form version than the one it replaces.",
                               errors: [FieldError(path: "version", message: "must be the version of the form it edits")])
            }
            let definition = try ops.definitions.definition(of: arrival.version)
            let check = definition.validate(answers: edited)
            let problems = check.errors + arrival.submission.doorProblems
            guard problems.isEmpty else {
                ops.metrics.add(.validationRefusals)
                throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: problems)
            }
            let current = try db.currentInstanceId(of: target)
            guard current == deprecatedID, let to = ReviewStateMachine.apply(.edit, to: target.reviewState) else {
                throw ApiError(.staleRevision, "This form edits an earlier version of the response (its current instance ID is \(current)): nothing was changed. Download the response again before editing it.",
                               extra: ["reviewState": .string(target.reviewState.rawValue), "revision": .number(Double(target.revision))])
            }
            // Its files: each a completed upload (stored before, or carried by this POST) of the version and question.
            try ops.uploads.checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: arrival.version.surveyVersionId,
                                             submitter: target.submitter, staged: staged, fileNames: arrival.submission.fileNames, in: db)
            let entity = try EntityEdit.plan(definition: definition, responseId: target.responseId, orgId: orgId, stored: target.answers,
                                             edited: edited, in: db)
            return .edit(target, to, entity, SummaryFacts(definition: definition, answers: edited, check: check).bytes, answers)
        }
        switch planned {
        case .replayed(let r):
            return .replayed(r)
        case .edit(let target, let to, let entity, let facts, let answers):
            do {
                let blobs = ops.blobs
                let written = try ops.gate.write(orgId: orgId, actor: user.userId) { tx in
                    for file in staged { try tx.commitUpload(file.record, tempPath: file.tempPath, blobs: blobs) }
                    let edited = try tx.editResponse(responseId: target.responseId, expectedRevision: target.revision, to: to, answers: answers,
                                                     facts: facts, source: "openrosa", instanceId: instanceID, comment: nil).response
                    try entity?.apply(in: tx, responseId: target.responseId, actor: user.userId)
                    return edited
                }.value
                ops.metrics.add(.reviewTransitions)
                return .edited(written)
            } catch let e as ApiError where e.code == .staleRevision {
                // The same edit, sent twice at once, committed by the other request: its replay.
                if let made = try ops.database.read({ try $0.responseVersion(orgId: orgId, instanceId: instanceID) }),
                   made.responseId == target.responseId, made.version.answers == answers,
                   let now = try ops.database.read({ try $0.response(orgId: orgId, responseId: target.responseId) }) {
                    return .replayed(now)
                }
                throw e
            }
        }
    }

    private enum Planned {
        case replayed(ResponseRecord)
        /// The answers as stored: canonical, with the files it keeps.
        case edit(ResponseRecord, ReviewState, EntityEdit?, [UInt8], String)
    }

    static let conflict = ApiError(.idempotencyConflict, "A different form with this instance ID was already received, so this one was not stored. Nothing was changed.")
}

extension Operations {
    /// ODK's edits of sent forms (`meta/deprecatedID`).
    public var openRosaEdits: OpenRosaEdit { OpenRosaEdit(operations: self) }
}
