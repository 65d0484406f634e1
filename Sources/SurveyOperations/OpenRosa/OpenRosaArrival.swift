import SurveyDomain
import SurveyStorage
import SurveyXForm

/// A filled-in form read against the version it names: the `Submission` the OpenRosa door hands
/// the submission operation, and the files its answers name (each to be stored as an upload of
/// that version and question before the submission runs).
public struct OpenRosaArrival: Sendable {
    public let instanceID: String
    /// The form id on the instance's root element.
    public let formId: String
    public let version: SurveyVersionRecord
    let definition: SurveyDefinition
    public let submission: Submission
    public let files: [SubmittedInstance.NamedFile]
    /// `meta/deprecatedID`: the instanceID of the response this instance edits, if it is an edit.
    public var deprecatedID: String? = nil

    /// The files its POST carried that its answers name, each checked as an upload of the
    /// question naming it, in the snapshot the instance was read in; a file stored already
    /// under its id (the POST sent again) is not staged twice. A part no answer names is not read.
    public func stage(_ received: [ReceivedFile], submitter: String, in db: ReadContext, operations: Operations) throws -> [StagedUpload] {
        var staged: [StagedUpload] = []
        for named in files {
            guard let file = received.first(where: { $0.fileName == named.fileName }) else { continue }
            let target = try operations.uploads.target(in: db, clientUploadId: OpenRosaForms.clientUploadId(instanceID: instanceID, fileName: named.fileName),
                                                       uploader: submitter, version: version, definition: definition, questionId: named.questionId,
                                                       contentType: file.contentType, declaredLength: file.size)
            if let s = try operations.uploads.stage(file, as: target) { staged.append(s) }
        }
        return staged
    }

    /// Reads `instance` (the `xml_submission_file` part): 400 for what is not a submission, 1032
    /// for an unusable instanceID, 404 for a form or version not published here. `draftOf`: the
    /// draft door's survey, whose draft alone the instance may name.
    public static func read(_ instance: [UInt8], orgId: String, in db: ReadContext, operations: Operations,
                            draftOf surveyId: String? = nil) throws -> OpenRosaArrival {
        let parsed: SubmittedInstance
        do { parsed = try SubmittedInstance(xml: instance) } catch {
            throw ApiError.malformed("The submission could not be read: \(error.message).")
        }
        guard let instanceID = parsed.instanceID, !instanceID.isEmpty else {
            throw ApiError.malformed("The submission has no meta/instanceID; surveyd keys every submission by it.")
        }
        guard ClientIdentifier.isValid(instanceID) else {
            throw ApiError(.invalidIdentifier, "The submission's instanceID must be 8–128 characters of A-Z a-z 0-9 _ - : .")
        }
        let named: SurveyVersionRecord?
        if let surveyId {
            named = try operations.openRosaForms.draft(in: db, orgId: orgId, surveyId: surveyId)
                .flatMap { $0.xform.formId == parsed.formId && $0.xform.version == parsed.version ? $0.version : nil }
        } else {
            named = try operations.openRosaForms.version(in: db, orgId: orgId, formId: parsed.formId, version: parsed.version)
        }
        guard let version = named else {
            let named = parsed.version.map { "\(parsed.formId) version \($0)" } ?? parsed.formId
            throw ApiError(.notFound, "The form \(named) is not published here: download the blank form again.")
        }
        let definition = try operations.definitions.definition(of: version)
        let (answers, files, problems) = parsed.answers(for: definition) { OpenRosaForms.clientUploadId(instanceID: instanceID, fileName: $0) }
        var submission = try Submission(clientSubmissionId: instanceID, surveyVersionId: version.surveyVersionId,
                                        contentHash: version.contentHash, answers: answers, entity: parsed.entity,
                                        entities: parsed.entities(for: definition),
                                        doorProblems: problems)
        for file in files { submission.fileNames[OpenRosaForms.clientUploadId(instanceID: instanceID, fileName: file.fileName)] = file.fileName }
        return OpenRosaArrival(instanceID: instanceID, formId: parsed.formId, version: version, definition: definition, submission: submission,
                               files: files, deprecatedID: parsed.deprecatedID)
    }
}
