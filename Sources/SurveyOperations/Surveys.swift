import Foundation
import Synchronization
import SurveyDomain
import SurveyStorage

/// Surveys and their immutable versions. Creating and publishing are gated writes by admins
/// (the door's route admits admins only).
public struct Surveys: Sendable {
    let operations: Operations

    public struct NewSurvey: Sendable {
        public let title: String
        public let reviewRequired: Bool
        public init(title: String, reviewRequired: Bool) { self.title = title; self.reviewRequired = reviewRequired }
    }

    public func create(orgId: String, by user: UserRecord, key: IdempotencyKey<SurveyRecord>? = nil,
                       _ request: () throws -> NewSurvey) throws -> KeyedOutcome<SurveyRecord> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        let clock = operations.clock
        return try operations.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> (NewSurvey, String) in
            let new = try request()
            guard !new.title.isEmpty, new.title.count <= 500 else {
                throw ApiError(.validationFailed, "`title` must be 1 to 500 characters.", errors: [FieldError(path: "title", message: "1 to 500 characters")])
            }
            return (new, Ids.make("srv", nowMillis: clock.nowMillis()))
        }, write: { prepared, tx in
            try tx.createSurvey(surveyId: prepared.1, title: prepared.0.title, reviewRequired: prepared.0.reviewRequired, createdBy: user.userId)
        })
    }

    /// A new version of an existing survey (404 before anything else when there is none).
    public func publish(orgId: String, surveyId: String, by user: UserRecord, key: IdempotencyKey<SurveyVersionRecord>? = nil,
                        definition: () throws -> FormSources.Published) throws -> KeyedOutcome<SurveyVersionRecord> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        let clock = operations.clock
        let blobs = operations.blobs
        // The staged files' temp names go once the write is over, whatever its outcome (after a
        // commit the blobs are linked in place).
        let staged = Mutex<[FormUpload.Staged]>([])
        defer { for s in staged.withLock({ $0 }) { unlink(s.tempPath) } }
        let parsedOnce = Mutex<SurveyDefinition?>(nil)
        let outcome = try operations.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: key, prepare: { () throws -> NewVersion in
            let published = try definition()
            staged.withLock { $0 = published.attachments }
            let definition = published.definition
            let parsed: SurveyDefinition
            do {
                parsed = try published.parsed ?? SurveyDefinition.parse(definition)
            } catch let e as ValidationErrors {
                throw ApiError(.validationFailed, "The survey definition is not valid.", errors: e.errors)
            }
            // Encoded once: its bytes are stored and hashed.
            let canonical = CanonicalJSON.encode(definition)
            parsedOnce.withLock { $0 = parsed }
            return NewVersion(contentHash: "sha256:" + Digest.sha256Hex(canonical), definition: String(decoding: canonical, as: UTF8.self),
                              surveyVersionId: Ids.make("sv", nowMillis: clock.nowMillis()), source: published.source,
                              attachments: published.attachments, parsed: parsed)
        }, write: { p, tx in
            try tx.publishVersion(surveyVersionId: p.surveyVersionId, surveyId: surveyId, contentHash: p.contentHash, definition: p.definition,
                                  source: p.source, attachments: p.attachments.map { ($0.record(surveyVersionId: p.surveyVersionId), $0.tempPath) },
                                  blobs: blobs)
        })
        // The version's first submission finds its definition parsed.
        if case .written(let v) = outcome, let parsed = parsedOnce.withLock({ $0 }) { operations.definitions.remember(parsed, of: v.surveyVersionId) }
        return outcome
    }

    struct NewVersion: Sendable {
        let contentHash: String
        let definition: String
        let surveyVersionId: String
        let source: VersionSourceRecord?
        let attachments: [FormUpload.Staged]
        /// Kept for the version's first submission (`DefinitionCache`).
        let parsed: SurveyDefinition
    }

    /// `sha256:` + hex SHA-256 of the canonical JSON of the definition.
    public static func contentHash(_ definition: JSONValue) -> String {
        "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(definition))
    }
}
