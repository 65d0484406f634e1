import Foundation
import Synchronization
import SurveyDomain
import SurveyStorage
import SurveyXForm

/// A survey made from a form, with the form as its first version, in one transaction (ODK
/// Central's form creation): creating the survey and publishing its version, each check of
/// either made as `create` and `publish` make it, and nothing of either stored when one refuses.
extension Surveys {
    public struct FromForm: Sendable {
        public let survey: SurveyRecord
        public let version: SurveyVersionRecord
    }

    /// The survey is titled after the form and requires review; its first version is its draft
    /// (`draft`) or published. The form's id must name no survey of the organization yet,
    /// published or as a draft: 409 / 1004 otherwise, nothing created. `definition` is given the
    /// new survey's id (an XLSForm without `form_id` takes it unless the door names another).
    public func create(orgId: String, by user: UserRecord, key: IdempotencyKey<FromForm>? = nil, draft: Bool,
                       definition: (_ surveyId: String) throws -> FormSources.Published) throws -> KeyedOutcome<FromForm> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        let operations = self.operations
        let clock = operations.clock
        let blobs = operations.blobs
        let staged = Mutex<[FormUpload.Staged]>([])
        defer { for s in staged.withLock({ $0 }) { unlink(s.tempPath) } }
        let outcome = try operations.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> (String, NewVersion) in
            let surveyId = Ids.make("srv", nowMillis: clock.nowMillis())
            let published = try definition(surveyId)
            staged.withLock { $0 = published.attachments }
            let p = try Self.newVersion(published, surveyId: surveyId, draft: draft, nowMillis: clock.nowMillis())
            // The form's title is the survey's, checked as any survey's.
            try Self.checkTitle(p.parsed.title)
            // Before the gate, as every validation is; checked again in the write's turn.
            if let formId = p.formId { try operations.database.read { try Self.refuseUsedFormId(formId, orgId: orgId, in: $0, operations: operations) } }
            return (surveyId, p)
        }, write: { prepared, tx in
            let (surveyId, p) = prepared
            try tx.takePublishingTurn()
            if let formId = p.formId { try Self.refuseUsedFormId(formId, orgId: orgId, in: tx.read, operations: operations) }
            let survey = try tx.createSurvey(surveyId: surveyId, title: p.parsed.title, reviewRequired: true, createdBy: user.userId)
            let version = try Self.write(p, surveyId: surveyId, draft: draft, in: tx, blobs: blobs)
            operations.definitions.remember(p.parsed, of: version.surveyVersionId)
            return FromForm(survey: survey, version: version)
        })
        return outcome
    }

    /// The survey whose published XForm or draft has the form id `formId`, if any.
    public func survey(withFormId formId: String, orgId: String, in db: ReadContext) throws -> SurveyRecord? {
        try Self.survey(withFormId: formId, orgId: orgId, in: db, operations: operations)
    }

    static func survey(withFormId formId: String, orgId: String, in db: ReadContext, operations: Operations) throws -> SurveyRecord? {
        if let published = try operations.openRosaForms.survey(otherThan: "", withFormId: formId, in: db, orgId: orgId) { return published }
        for draft in try db.draftVersions(orgId: orgId) where (try operations.definitions.definition(of: draft).formId ?? draft.surveyId) == formId {
            return try db.survey(orgId: orgId, surveyId: draft.surveyId)
        }
        return nil
    }

    static func refuseUsedFormId(_ formId: String, orgId: String, in db: ReadContext, operations: Operations) throws {
        guard let other = try survey(withFormId: formId, orgId: orgId, in: db, operations: operations) else { return }
        throw ApiError(.idempotencyConflict, "A form with the id \(formId) exists already (the survey \"\(other.title)\", \(other.surveyId)); nothing was created.")
    }
}
