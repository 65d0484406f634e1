import Foundation
import SurveyDomain
import SurveyStorage

/// Reading a survey's responses for a feed (the OData door): any member of the organization, a
/// collector seeing only their own responses, as every other read. A read, so never gated and
/// not audited per page (an export is audited once; a feed is read page after page).
public struct FeedReads: Sendable {
    /// Who may read a survey's feed: any member (what each one sees is decided in `open`).
    public static let access = Access.member(anyOf: [])
    let operations: Operations

    /// Order: tenancy (404), the survey (404); then one snapshot that every row of this request
    /// is read from.
    public func open(orgId: String, surveyId: String, by user: UserRecord) throws -> FeedSource {
        let ops = operations
        try ops.admit(user, to: Self.access, orgId: orgId)
        let snapshot = try ops.database.snapshot()
        do {
            let read = snapshot.read
            guard let survey = try read.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
            let versions = try read.surveyVersions(surveyId: surveyId).map { v in (v, try ops.definitions.definition(of: v)) }
            let users = try read.users(orgId: orgId)
            let names = Dictionary(users.map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
            let actors = Dictionary(users.map { ($0.userId, $0.actorId) }, uniquingKeysWith: { a, _ in a })
            var filter = ExportFilter(orgId: orgId, surveyId: surveyId)
            if !ops.seesAll(user) { filter.submittedBy = user.userId }
            return FeedSource(snapshot: snapshot, survey: survey, versions: versions, submitterNames: names, actorIds: actors,
                              filter: filter)
        } catch {
            snapshot.close()
            throw error
        }
    }
}

/// One feed request's snapshot: the survey, its versions, and the responses the caller may see,
/// in response-id order (the order of arrival) from any response id on.
public final class FeedSource: @unchecked Sendable {
    // @unchecked: used by one request's thread, then closed.
    private let snapshot: Snapshot
    public let survey: SurveyRecord
    /// Every version, oldest first, with its definition.
    public let versions: [(record: SurveyVersionRecord, definition: SurveyDefinition)]
    public let submitterNames: [String: String]
    /// Each user's actorId (ODK Central's names for users), by userId.
    public let actorIds: [String: Int64]
    private let filter: ExportFilter
    private lazy var versionNumbers: [String: Int64] = Dictionary(versions.map { ($0.record.surveyVersionId, $0.record.number) },
                                                                  uniquingKeysWith: { a, _ in a })

    init(snapshot: Snapshot, survey: SurveyRecord, versions: [(SurveyVersionRecord, SurveyDefinition)], submitterNames: [String: String],
         actorIds: [String: Int64], filter: ExportFilter) {
        self.snapshot = snapshot
        self.survey = survey
        self.versions = versions.map { (record: $0.0, definition: $0.1) }
        self.submitterNames = submitterNames
        self.actorIds = actorIds
        self.filter = filter
    }

    /// The visible responses from `responseId` on (nil: from the first), one at a time.
    public func responses(from responseId: String?) throws -> ExportRows {
        var f = filter
        f.responseIdFrom = responseId
        return try snapshot.exportRows(f)
    }

    /// How many responses the caller may see.
    public func count() throws -> Int { try snapshot.exportCount(filter) }

    public func versionNumber(of surveyVersionId: String) -> Int64? { versionNumbers[surveyVersionId] }

    public func close() { snapshot.close() }
}

extension Operations {
    public var feeds: FeedReads { FeedReads(operations: self) }

    /// Step 1 for HTTP Basic credentials (what Excel and Power BI offer for a feed): a console
    /// user's email (any case) and password, or any user name with an API token as the password.
    /// Every attempt is counted by the sign-in throttle before it is checked, per account and per
    /// address, exactly like the console's sign-in; a success takes it back. A wrong email, a
    /// wrong password and an unknown token all answer the same 1007.
    public func authenticate(basicUser rawUser: String, password: String, from address: String) throws -> Caller {
        let user = rawUser.trimmingCharacters(in: .whitespaces).lowercased()
        guard !user.isEmpty, !password.isEmpty else { throw Self.wrongBasic }
        let attempt = try throttle.begin(["account:" + user, "address:" + address], now: clock.nowMillis())
        let caller: Caller?
        do {
            // A token first: it costs a hash look-up, where a password costs Argon2.
            var found: Caller?
            do { found = try authenticate(bearerToken: password) } catch let e as ApiError where e.code == .unauthenticated { found = nil }
            if let found {
                caller = found
            } else if user.contains("@") {
                let account = password.utf8.count > Passwords.maximumLength ? nil : try database.read { try $0.consoleAccount(email: user) }
                let verified = try passwordChecks.run { Passwords.verify(password, account?.passwordHash ?? Passwords.decoy) }
                caller = account.flatMap { a in a.passwordHash != nil && verified && a.user.active ? .user(a.user, tokenId: "basic") : nil }
            } else {
                caller = nil
            }
        } catch {
            throttle.succeeded(attempt)  // never checked: it does not count
            throw error
        }
        guard let caller else { throw Self.wrongBasic }
        throttle.succeeded(attempt)
        return caller
    }

    static let wrongBasic = ApiError(.unauthenticated, "The user name or the password is not right (a console user's email and password, or any user name with an API token as the password).")
}
