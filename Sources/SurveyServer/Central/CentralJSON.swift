import SurveyDomain
import SurveyForms
import SurveyOperations
import SurveyStorage

/// surveyd's records in ODK Central's JSON shapes: every key pyodk's models require is present,
/// `null` when surveyd has nothing for it.
enum CentralJSON {
    static func project(_ org: OrgRecord) -> JSONValue {
        ["id": .number(Double(org.projectId)), "name": .string(org.name), "description": .null, "archived": .bool(false), "keyId": .null,
         "createdAt": .string(Timestamp.format(org.createdAt)), "updatedAt": .null, "deletedAt": .null]
    }

    /// A survey as Central's form: its XForm's id and version, the md5 of the XForm served.
    static func form(_ f: OpenRosaForms.Listed, projectId: Int64) -> JSONValue {
        ["projectId": .number(Double(projectId)), "xmlFormId": .string(f.xform.formId ?? ""), "name": .string(f.survey.title),
         "version": .string(f.xform.version ?? ""), "hash": .string(f.xform.md5), "state": .string(f.survey.state.rawValue),
         "enketoId": .null, "keyId": .null, "createdAt": .string(Timestamp.format(f.survey.createdAt)),
         "updatedAt": .string(Timestamp.format(f.version.createdAt)), "publishedAt": .string(Timestamp.format(f.version.createdAt))]
    }

    /// A response as Central's submission: `instanceId` is its `clientSubmissionId`;
    /// `surveydReviewState` keeps surveyd's own state beside Central's name for it.
    static func submission(_ r: ResponseRecord, submitterId: Int64) -> JSONValue {
        ["instanceId": .string(r.clientSubmissionId), "submitterId": .number(Double(submitterId)), "deviceId": .null,
         "createdAt": .string(Timestamp.format(r.receivedAt)), "updatedAt": .null, "reviewState": reviewState(r.reviewState),
         "userAgent": .null, "instanceName": .null, "surveydReviewState": .string(r.reviewState.rawValue)]
    }

    /// Central's name for a review state: not yet decided is `null`; returned is `hasIssues`.
    static func reviewState(_ s: ReviewState) -> JSONValue {
        switch s {
        case .none, .submitted, .inReview: .null
        case .returned, .hasIssues: .string("hasIssues")
        case .edited: .string("edited")
        case .approved: .string("approved")
        case .rejected: .string("rejected")
        }
    }
}
