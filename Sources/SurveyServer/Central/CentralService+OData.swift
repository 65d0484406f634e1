import Foundation
import SurveyHTTP
import SurveyOData
import SurveyOperations
import SurveyStorage

/// ODK Central's OData services, what pyodk's `submissions.get_table` and `entities.get_table`
/// (and so `entities.merge`) read: a form's at `…/forms/{xmlFormId}.svc`, an entity list's at
/// `…/datasets/{name}.svc`. Each is surveyd's own feed of that survey or list (`ODataService`,
/// `EntityListODataService`), admitted as every Central route is (a bearer token: 401 →
/// project 404 → role 403; any member reads, a collector only their own submissions), with
/// its links under Central's path and Central's names in its rows (`ODataNaming.central`).
/// Central answers a table whole unless a page size is asked, and pyodk reads `value` alone:
/// so without `Prefer: odata.maxpagesize` the rows up to `$top` come in one response, written a
/// page at a time. Reads only: never gated.
extension CentralService {
    static let formFeed = "/v1/projects/{projectId}/forms/{xmlFormId}.svc"
    static let datasetFeed = "/v1/projects/{projectId}/datasets/{name}.svc"

    func registerOData(into router: inout Router) {
        let readers = Access.member(anyOf: [])
        let routes: [(String, @Sendable (HTTPRequest) throws -> HTTPResponse)] = [
            (Self.formFeed, { request in try surveyFeeds.serviceDocument(try surveyFeed(request)) }),
            (Self.formFeed + "/$metadata", { request in try surveyFeeds.metadata(try surveyFeed(request)) }),
            (Self.formFeed + "/{table}", { request in try surveyFeeds.entitySet(try surveyFeed(request), request, options: Self.options(request), wholeUnlessPaged: true) }),
            (Self.datasetFeed, { request in try entityFeeds.serviceDocument(try entityFeed(request)) }),
            (Self.datasetFeed + "/$metadata", { request in try entityFeeds.metadata(try entityFeed(request)) }),
            (Self.datasetFeed + "/{table}", { request in try entityFeeds.entitySet(try entityFeed(request), request, options: Self.options(request), wholeUnlessPaged: true) }),
        ]
        for (pattern, handler) in routes {
            // Blocking: a page may read many rows.
            router.add("GET", pattern, access: readers, runs: .blocking) { request in
                CentralRefusal.answer {
                    do { return try handler(request) } catch let e as ODataError { return CentralRefusal.odata(e) }
                }
            }
        }
    }

    /// The path's form read by the admitted caller: its survey's feed, with Central's names —
    /// each user's actorId and each version's XForm version, for the page's snapshot.
    func surveyFeed(_ request: HTTPRequest) throws -> SurveyFeedTarget {
        let (user, org) = try admitMember(request)
        let form = try listedForm(request, orgId: org.orgId)
        let database = services.database, forms = operations.openRosaForms
        return SurveyFeedTarget(orgId: org.orgId, surveyId: form.survey.surveyId, user: user,
                                serviceRoot: request.origin + "/v1/projects/\(org.projectId)/forms/\(Self.segment(request.parameter("xmlFormId"))).svc",
                                naming: { source in
                                    let versions = try database.read { db in
                                        try source.versions.reduce(into: [String: String]()) { out, v in
                                            out[v.record.surveyVersionId] = try forms.xformVersion(of: v.record, in: db)
                                        }
                                    }
                                    return .central(actorIds: source.actorIds, formVersions: versions)
                                })
    }

    /// The path's entity list in the admitted caller's organization, with Central's names.
    func entityFeed(_ request: HTTPRequest) throws -> EntityFeedTarget {
        let (_, org) = try admitMember(request)
        let orgId = org.orgId
        return EntityFeedTarget(orgId: orgId, listName: request.parameter("name"),
                                serviceRoot: request.origin + "/v1/projects/\(org.projectId)/datasets/\(Self.segment(request.parameter("name"))).svc",
                                naming: { db in
                                    .central(actorIds: Dictionary(try db.users(orgId: orgId).map { ($0.userId, $0.actorId) }, uniquingKeysWith: { a, _ in a }))
                                })
    }

    /// The request's query options, its booleans read as Central reads them: in any case
    /// (pyodk sends `$count=True`).
    static func options(_ request: HTTPRequest) -> [String: String] {
        var q = request.query
        for key in ["$count", "$wkt"] {
            if let v = q[key], v.lowercased() == "true" || v.lowercased() == "false" { q[key] = v.lowercased() }
        }
        return q
    }

    /// A path parameter written back into a link: whatever a path may not hold, percent-encoded.
    static func segment(_ value: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
