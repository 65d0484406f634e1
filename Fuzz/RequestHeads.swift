// fuzz-sources: Sources/SurveyHTTP/BodySink.swift Sources/SurveyHTTP/HTTPRequest.swift Sources/SurveyHTTP/Router.swift
// fuzz-sources: Sources/SurveyHTTP/HTTPResponse.swift Sources/SurveyHTTP/BodySource.swift Sources/SurveyHTTP/DeferredResponse.swift
// fuzz-sources: Sources/SurveyHTTP/FormDecoder.swift Sources/SurveyHTTP/FormFields.swift Sources/SurveyHTTP/FormFile.swift
// fuzz-sources: Sources/SurveyHTTP/ExchangeState.swift Sources/SurveyHTTP/ErrorCode+HTTPStatus.swift
// fuzz-sources: Sources/SurveyHTTP/ProblemDocument.swift Sources/SurveyHTTP/ProtocolRefusal.swift
//
// What every API request's head goes through before a handler: the path's route (Router, over
// the API's patterns), the bearer token of `Authorization` (RequestHead.bearerToken) and a
// list's `limit` and `after` (PageQuery). SurveyHTTP's files are compiled in as they are. The
// input is the path and the Authorization value;
// split at its first NUL byte it is also `limit` and `after`.
import SurveyDomain

/// The API's routes (SurveyServer registers them; the harness cannot build that module). Made
/// for each input, not kept in a global: a pattern segment with a literal suffix is an enum
/// payload LeakSanitizer does not trace from a global, and it would report it at exit.
private func makeRouter() -> Router {
    let routes = [
        "POST /v1/orgs", "GET /v1/orgs/{orgId}/changes", "GET /v1/orgs/{orgId}/responses", "POST /v1/orgs/{orgId}/responses",
        "GET /v1/orgs/{orgId}/responses/{responseId}", "GET /v1/orgs/{orgId}/responses/{responseId}/history",
        "POST /v1/orgs/{orgId}/responses/{responseId}/review", "POST /v1/orgs/{orgId}/responses/{responseId}/resubmit",
        "GET /v1/orgs/{orgId}/surveys", "POST /v1/orgs/{orgId}/surveys", "GET /v1/orgs/{orgId}/surveys/{surveyId}",
        "GET /v1/orgs/{orgId}/surveys/{surveyId}/responses.csv", "POST /v1/orgs/{orgId}/surveys/{surveyId}/versions",
        "GET /v1/orgs/{orgId}/survey-versions/{surveyVersionId}", "PUT /v1/orgs/{orgId}/uploads/{clientUploadId}",
        "GET /v1/orgs/{orgId}/uploads/{clientUploadId}", "GET /v1/orgs/{orgId}/uploads/{clientUploadId}/content",
        "OPTIONS /v1/orgs/{orgId}/uploads/resumable", "POST /v1/orgs/{orgId}/uploads/resumable",
        "HEAD /v1/orgs/{orgId}/uploads/resumable/{uploadId}", "PATCH /v1/orgs/{orgId}/uploads/resumable/{uploadId}",
        "DELETE /v1/orgs/{orgId}/uploads/resumable/{uploadId}", "DELETE /v1/orgs/{orgId}/users/{userId}/tokens/{tokenId}",
        "POST /v1/orgs/{orgId}/webhooks/{webhookId}/deliveries/{deliveryId}/retry", "GET /console", "GET /console/",
        "GET /healthz", "PUT /v1/orgs/{orgId}/surveys/{surveyId}/state",
        // The OData feed: a parameter with a literal suffix.
        "GET /v1/orgs/{orgId}/surveys/{surveyId}.svc", "GET /v1/orgs/{orgId}/surveys/{surveyId}.svc/$metadata",
        "GET /v1/orgs/{orgId}/surveys/{surveyId}.svc/{table}",
    ]
    var r = Router()
    for route in routes {
        let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
        r.add(parts[0], parts[1], access: "anyone") { _ in HTTPResponse(status: 204) }
    }
    return r
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let s = String(decoding: bytes, as: UTF8.self)
    route(s)
    bearer(s)
    let parts = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    page(limit: parts[0], after: parts.count > 1 ? parts[1] : nil)
    return 0
}

/// A matched pattern with its parameters put back is the path, and no parameter is empty. (What
/// comes before a path's first `/` is not looked at; the server's paths start with one.)
private func route(_ path: String) {
    let router = makeRouter()
    for method in ["GET", "HEAD", "PATCH"] {
        guard case .found(let r, let parameters) = router.match(method: method, path: path), path.utf8.first == UInt8(ascii: "/") else { continue }
        let rebuilt = r.segments.map { segment -> String in
            switch segment {
            case .literal(let bytes): return String(decoding: bytes, as: UTF8.self)
            case .parameter(let name, let suffix): return (parameters[name] ?? "") + String(decoding: suffix, as: UTF8.self)
            }
        }
        guard ("/" + rebuilt.joined(separator: "/")).utf8.elementsEqual(path.utf8), parameters.values.allSatisfy({ !$0.isEmpty }) else {
            fatalError("\(method) \(path) matched \(r.pattern) with \(parameters)")
        }
    }
}

private func bearer(_ value: String) {
    let head = RequestHead(method: "GET", path: "/v1/orgs", route: "/v1/orgs", pathParameters: [:], query: [:],
                           headers: ["authorization": value])
    let token = head.bearerToken
    // On ASCII the rule is plain: spaces, `bearer` in any case, a space, then the token
    // without the spaces and tabs around it.
    guard value.utf8.allSatisfy({ $0 < 0x80 }) else {
        if let token, token.isEmpty { fatalError("empty token from \(value)") }
        return
    }
    guard token.map({ Array($0.utf8) }) == expectedToken(Array(value.utf8)) else {
        fatalError("Authorization \(value): token \(String(describing: token))")
    }
}

private func expectedToken(_ u: [UInt8]) -> [UInt8]? {
    var i = 0
    while i < u.count, u[i] == 0x20 { i += 1 }
    let scheme = i
    while i < u.count, u[i] != 0x20 { i += 1 }
    guard i < u.count, u[scheme..<i].map({ $0 | 0x20 }) == Array("bearer".utf8) else { return nil }
    var rest = u[i...]
    while let f = rest.first, f == 0x20 || f == 0x09 { rest = rest.dropFirst() }
    while let l = rest.last, l == 0x20 || l == 0x09 { rest = rest.dropLast() }
    return rest.isEmpty ? nil : Array(rest)
}

private func page(limit: String, after: String?) {
    var query = ["limit": limit]
    if let after { query["after"] = after }
    for q in [query, query.filter { $0.key != "limit" }] {
        let read = try? PageQuery(q)
        if let l = q["limit"] {
            let n = Int(l)
            guard (read != nil) == (n.map { $0 >= 1 && $0 <= 500 } ?? false), read.map({ $0.limit == n }) ?? true else {
                fatalError("limit \(l) read as \(String(describing: read))")
            }
        } else {
            guard read?.limit == 50 else { fatalError("no limit read as \(String(describing: read))") }
        }
        if let read, read.after != (after?.isEmpty == false ? after : nil) { fatalError("after \(String(describing: after)) read as \(read)") }
    }
}
