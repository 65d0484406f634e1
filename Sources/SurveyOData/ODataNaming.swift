import SurveyDomain
import SurveyOperations

/// The names a feed writes where surveyd and ODK Central name the same thing differently. One
/// feed serves both doors: surveyd's own (`/v1/orgs/{orgId}/surveys/{surveyId}.svc`) and
/// Central's (`/v1/projects/{n}/forms/{xmlFormId}.svc`, what pyodk and ruODK read), whose rows
/// differ only here — `__system/reviewState` in Central's names (`null` until decided),
/// `submitterId` and `creatorId` the user's actorId as text, `formVersion` the XForm's version,
/// and an entity's `__system/updates`. A `$filter` reads the same names, since it reads the row.
public struct ODataNaming: Sendable {
    public enum Dialect: Sendable {
        case surveyd
        case central
    }

    public let dialect: Dialect
    /// Central: each user's actorId as text, by userId.
    let actorIds: [String: String]
    /// Central: each version's XForm version, by surveyVersionId.
    let formVersions: [String: String]

    public static let surveyd = ODataNaming(dialect: .surveyd, actorIds: [:], formVersions: [:])

    /// ODK Central's names; `formVersions` only matters to a survey's feed.
    public static func central(actorIds: [String: Int64], formVersions: [String: String] = [:]) -> ODataNaming {
        ODataNaming(dialect: .central, actorIds: actorIds.mapValues { String($0) }, formVersions: formVersions)
    }

    /// `__system/reviewState`.
    public func reviewState(_ state: ReviewState) -> JSONValue {
        switch dialect {
        case .surveyd: .string(state.rawValue)
        case .central: CentralReviews.centralName(state).map(JSONValue.string) ?? .null
        }
    }

    /// `__system/reviewState` of a state stored by its name (an export row's).
    func reviewState(named raw: String) -> JSONValue {
        ReviewState(rawValue: raw).map(reviewState) ?? .string(raw)
    }

    /// A user as `submitterId` and `creatorId` name it. Central's door answers actor 0 for a
    /// user it cannot name, as its other reads do.
    public func user(_ userId: String) -> String {
        switch dialect {
        case .surveyd: userId
        case .central: actorIds[userId] ?? "0"
        }
    }

    /// `__system/formVersion`: surveyd's version number (or id); Central's XForm version ("" when
    /// the XForm has none, as Central's form reads answer).
    public func formVersion(_ surveyVersionId: String, number: Int64?) -> String {
        switch dialect {
        case .surveyd: number.map { String($0) } ?? surveyVersionId
        case .central: formVersions[surveyVersionId] ?? ""
        }
    }

    /// Whether an entity's `__system` has Central's `updates` (its version − 1).
    public var entityUpdates: Bool { dialect == .central }
}
