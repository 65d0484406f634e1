import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOData
import SurveyOperations
import SurveyStorage

/// The API's door onto a survey's OData feed (`/v1/orgs/{orgId}/surveys/{surveyId}.svc`): the
/// service document, `$metadata` and one entity set per table, for Power BI, Excel, R and Python.
/// A caller is a bearer token or HTTP Basic credentials (what Excel and Power BI offer for a
/// feed: a console user's email and password, or any user name with an API token), admitted
/// with the same `Access` as every read (`FeedReads.access`: any member; a collector sees only
/// their own responses). Reads only: never gated, not audited per page. ODK Central's door
/// serves the same feed under its own paths (`CentralService+OData`): it resolves and admits in
/// its own way, then reads through the `SurveyFeedTarget` functions below.
struct ODataService {
    let services: Services
    /// Where pages are read and written.
    let workers = FeedWorkers()

    static let root = "/v1/orgs/{orgId}/surveys/{surveyId}.svc"
    static let challenge = ("WWW-Authenticate", "Basic realm=\"surveyd\"")
    static let jsonType = "application/json;odata.metadata=minimal"

    typealias Handler = @Sendable (Admission, HTTPRequest) throws -> HTTPResponse

    func register(into router: inout Router) {
        addFeed(root: Self.root, serviceDocument: serviceDocument, metadata: metadata, entitySet: entitySet, into: &router)
    }

    /// A feed's three routes under `root` (a survey's or an entity list's): each admitted as
    /// every feed is, an `ODataError` answered in OData's shape. Blocking: a password is checked
    /// with Argon2, and a page may read many rows.
    func addFeed(root: String, serviceDocument: @escaping Handler, metadata: @escaping Handler, entitySet: @escaping Handler,
                 into router: inout Router) {
        for (pattern, handler) in [(root, serviceDocument), (root + "/$metadata", metadata), (root + "/{table}", entitySet)] {
            let service = self
            router.add("GET", pattern, access: FeedReads.access, runs: .blocking, needsClientAddress: true) { request in
                do {
                    return try handler(try service.admit(request.head), request)
                } catch let e as ODataError {
                    return Self.error(e)
                }
            }
        }
    }

    /// Steps 1–2: the caller (bearer or Basic; a 401 names the Basic challenge), then tenancy.
    func admit(_ head: RequestHead) throws -> Admission {
        let caller: Caller
        do {
            if let basic = Self.basicCredentials(head.header("authorization")) {
                caller = try services.operations.authenticate(basicUser: basic.user, password: basic.password, from: head.clientAddress)
            } else {
                caller = try services.operations.authenticate(bearerToken: head.bearerToken)
            }
        } catch let e as ApiError where e.code == .unauthenticated {
            throw ProtocolRefusal(e, headers: [Self.challenge])
        }
        return try services.database.read { db in
            try services.operations.admit(caller, to: FeedReads.access, orgId: head.parameter("orgId"), in: db)
        }
    }

    /// `Basic <base64(user:password)>` (the scheme in any case); nil when the header is not Basic.
    /// Credentials that cannot be read are a user and password that match nothing.
    static func basicCredentials(_ header: String?) -> (user: String, password: String)? {
        guard let header else { return nil }
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count >= 1, parts[0].lowercased() == "basic" else { return nil }
        guard parts.count == 2, parts[1].utf8.count <= 4096, let bytes = Base64.decode(parts[1].trimmingCharacters(in: .whitespaces)),
              let text = String(validating: bytes, as: UTF8.self), let colon = text.firstIndex(of: ":") else { return ("", "") }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The survey the path names, read by the admitted caller, with surveyd's own names.
    private func target(_ admission: Admission, _ request: HTTPRequest) throws -> SurveyFeedTarget {
        SurveyFeedTarget(orgId: admission.orgId, surveyId: request.parameter("surveyId"), user: try admission.member(),
                         serviceRoot: request.origin + "/v1/orgs/\(request.parameter("orgId"))/surveys/\(request.parameter("surveyId")).svc",
                         naming: { _ in .surveyd })
    }

    func serviceDocument(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try serviceDocument(try target(admission, request))
    }

    func metadata(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try metadata(try target(admission, request))
    }

    func entitySet(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try entitySet(try target(admission, request), request, options: request.query, wholeUnlessPaged: false)
    }

    // MARK: - A survey's feed, whichever door names it

    /// The feed's snapshot and model for the caller: 404 for a survey that is not there (or not the caller's organization's).
    private func open(_ target: SurveyFeedTarget) throws -> (FeedSource, ODataModel) {
        let source = try services.operations.feeds.open(orgId: target.orgId, surveyId: target.surveyId, by: target.user)
        return (source, ODataModel(definitions: source.versions.map(\.definition)))
    }

    func serviceDocument(_ target: SurveyFeedTarget) throws -> HTTPResponse {
        let (source, model) = try open(target)
        defer { source.close() }
        return Self.answer(ODataDocuments.serviceDocument(model, serviceRoot: target.serviceRoot), Self.jsonType)
    }

    func metadata(_ target: SurveyFeedTarget) throws -> HTTPResponse {
        let (source, model) = try open(target)
        defer { source.close() }
        return Self.answer(try ODataDocuments.metadata(model), "application/xml")
    }

    /// A page of the path's table, with `@odata.nextLink` under the target's service root. With
    /// `wholeUnlessPaged` (ODK Central's door: Central answers every row unless a page size is
    /// asked, and pyodk reads `value` alone), a request without `Prefer: odata.maxpagesize` is
    /// answered whole — up to its `$top` — written a page at a time while it is sent, each page
    /// from its own snapshot, so neither memory nor a snapshot grows with the table.
    func entitySet(_ target: SurveyFeedTarget, _ request: HTTPRequest, options: [String: String], wholeUnlessPaged: Bool) throws -> HTTPResponse {
        let name = request.parameter("table")
        if name.contains("(") {
            throw ODataError.unsupported("Addressing one row by its key (\(name)) is not supported; use $filter=__id eq '…'.")
        }
        let (size, applied) = Self.pageSize(request.header("prefer"))
        if wholeUnlessPaged && !applied {
            let first = try workers.run { try readPage(target, name, options, size: size) }
            var rest = options
            rest["$count"] = nil  // counted once, on the first page
            let head = ODataFeed.head(count: first.count, setName: name, serviceRoot: target.serviceRoot, nextLink: nil)
            let stream = ODataRowStream(head: head, first: first) { token, _ in
                var q = rest
                q["$skiptoken"] = token
                return try workers.run { try readPage(target, name, q, size: size) }
            }
            return .stream(stream, headers: Self.headers(Self.jsonType))
        }
        let page = try workers.run { try readPage(target, name, options, size: size) }
        let next = page.next.map { token in
            var q = options
            q["$skiptoken"] = token
            return target.serviceRoot + "/" + name + "?" + Self.encode(q)
        }
        var response = Self.answer(ODataFeed.body(page, setName: name, serviceRoot: target.serviceRoot, nextLink: next), Self.jsonType)
        if applied { response.headers.append(("Preference-Applied", "odata.maxpagesize=\(size)")) }
        return response
    }

    /// One page of a table, on one of the feed's workers.
    private func readPage(_ target: SurveyFeedTarget, _ name: String, _ options: [String: String], size: Int) throws -> ODataFeed.Page {
        let (source, model) = try open(target)
        defer { source.close() }
        guard let table = model.table(named: name) else { throw ApiError.notFound() }
        let query = try ODataQuery(options, model: model, table: table)
        let feed = ODataFeed(model: model, source: source, table: table, query: query, naming: try target.naming(source))
        if let plain = try feed.plainPage(size: size) {
            // The rows are read; writing them needs no snapshot.
            source.close()
            return try plain.write()
        }
        return try feed.page(size: size)
    }

    /// `Prefer: odata.maxpagesize=<n>` (clamped to 1…`ODataFeed.maxPageSize`), else the default.
    static func pageSize(_ prefer: String?) -> (Int, applied: Bool) {
        for part in (prefer ?? "").split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if kv.count == 2, kv[0].lowercased() == "odata.maxpagesize", let n = Int(kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))), n > 0 {
                return (min(n, ODataFeed.maxPageSize), true)
            }
        }
        return (ODataFeed.defaultPageSize, false)
    }

    /// A query string carrying every option of the request (sorted, so links are stable).
    static func encode(_ query: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~$")
        return query.sorted { $0.key < $1.key }.map { k, v in
            (k.addingPercentEncoding(withAllowedCharacters: allowed) ?? k) + "=" + (v.addingPercentEncoding(withAllowedCharacters: allowed) ?? v)
        }.joined(separator: "&")
    }

    static func answer(_ body: [UInt8], _ contentType: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers(contentType), body: body)
    }

    static func headers(_ contentType: String) -> [(String, String)] {
        [("Content-Type", contentType), ("OData-Version", "4.0"), ("Cache-Control", "private, no-store")]
    }

    /// OData's error body: `{"error": {"code": "<status>", "message": "<sentence>"}}`.
    static func error(_ e: ODataError) -> HTTPResponse {
        let body: JSONValue = ["error": ["code": .string(String(e.status)), "message": .string(e.message)]]
        return HTTPResponse(status: e.status, headers: [("Content-Type", "application/json"), ("OData-Version", "4.0")], body: CanonicalJSON.encode(body))
    }
}
