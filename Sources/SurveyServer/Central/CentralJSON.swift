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
        form(f.survey, version: f.version, xform: f.xform, projectId: projectId)
    }

    /// The same of a survey's version, published or its draft (`publishedAt` null while the
    /// survey has only a draft).
    static func form(_ survey: SurveyRecord, version: SurveyVersionRecord, xform: VersionFiles.XForm?, projectId: Int64) -> JSONValue {
        ["projectId": .number(Double(projectId)), "xmlFormId": .string(xform?.formId ?? ""), "name": .string(survey.title),
         "version": .string(xform?.version ?? ""), "hash": .string(xform?.md5 ?? ""), "state": .string(survey.state.rawValue),
         "enketoId": .null, "keyId": .null, "createdAt": .string(Timestamp.format(survey.createdAt)),
         "updatedAt": .string(Timestamp.format(version.createdAt)),
         "publishedAt": version.draft ? .null : .string(Timestamp.format(version.createdAt))]
    }

    /// A response as Central's submission: `instanceId` is its `clientSubmissionId`;
    /// `surveydReviewState` keeps surveyd's own state beside Central's name for it.
    static func submission(_ r: ResponseRecord, submitterId: Int64) -> JSONValue {
        ["instanceId": .string(r.clientSubmissionId), "submitterId": .number(Double(submitterId)), "deviceId": .null,
         "createdAt": .string(Timestamp.format(r.receivedAt)), "updatedAt": .null, "reviewState": reviewState(r.reviewState),
         "userAgent": .null, "instanceName": .null, "surveydReviewState": .string(r.reviewState.rawValue)]
    }

    /// A submission whose XML waits for its files: not reviewed, not yet a response.
    static func submission(waiting w: WaitingSubmissionRecord, submitterId: Int64) -> JSONValue {
        ["instanceId": .string(w.clientSubmissionId), "submitterId": .number(Double(submitterId)), "deviceId": .null,
         "createdAt": .string(Timestamp.format(w.receivedAt)), "updatedAt": .null, "reviewState": .null,
         "userAgent": .null, "instanceName": .null, "surveydReviewState": .string("waitingForFiles")]
    }

    /// Central's name for a review state: not yet decided is `null`; returned is `hasIssues`.
    static func reviewState(_ s: ReviewState) -> JSONValue {
        CentralReviews.centralName(s).map(JSONValue.string) ?? .null
    }

    /// An entity list as Central's dataset; `properties` (with the forms that write each: none
    /// are named, surveyd keeps no such link) on the one-list read.
    static func dataset(_ l: EntityListRecord, projectId: Int64, withProperties: Bool) -> JSONValue {
        var o: [String: JSONValue] = ["name": .string(l.name), "projectId": .number(Double(projectId)), "createdAt": .string(Timestamp.format(l.createdAt)),
                                      "approvalRequired": .bool(false)]
        if withProperties {
            o["properties"] = .array(l.properties.map {
                ["name": .string($0), "odataName": .string($0), "publishedAt": .string(Timestamp.format(l.createdAt)), "forms": .array([])]
            })
        }
        return .object(o)
    }

    /// An entity as Central's: `uuid`, the actors who made it and its current version, and that
    /// version (`data`: its properties, strings).
    static func entity(_ e: EntityRecord, creatorId: Int64, versionCreatorId: Int64, baseVersion: Int64?) -> JSONValue {
        let current: JSONValue = [
            "label": .string(e.label), "current": .bool(true), "createdAt": .string(Timestamp.format(e.updatedAt)),
            "creatorId": .number(Double(versionCreatorId)), "userAgent": .string(""), "version": .number(Double(e.version)),
            "data": .object(e.properties.mapValues(JSONValue.string)), "baseVersion": baseVersion.map { .number(Double($0)) } ?? .null,
            "conflictingProperties": .null,
        ]
        return ["uuid": .string(e.entityId), "creatorId": .number(Double(creatorId)), "createdAt": .string(Timestamp.format(e.createdAt)),
                "updatedAt": e.version > 1 ? .string(Timestamp.format(e.updatedAt)) : .null,
                "deletedAt": e.deletedAt.map { .string(Timestamp.format($0)) } ?? .null,
                "conflict": e.conflict.map(JSONValue.string) ?? .null, "currentVersion": current]
    }

    /// A collector as Central's app user (`field_key`); `token` only when it may be shown.
    static func appUser(_ u: UserRecord, projectId: Int64, token: String?, createdAt: Int64) -> JSONValue {
        ["projectId": .number(Double(projectId)), "id": .number(Double(u.actorId)), "displayName": .string(u.name), "type": .string("field_key"),
         "token": token.map(JSONValue.string) ?? .null, "createdAt": .string(Timestamp.format(createdAt)), "updatedAt": .null,
         "deletedAt": .null]
    }
}
