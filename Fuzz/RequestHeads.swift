// fuzz-sources: Sources/SurveyHTTP/BodySink.swift Sources/SurveyHTTP/HTTPRequest.swift
//
// What every API request's head goes through before a handler: the bearer token of
// `Authorization` (RequestHead.bearerToken, compiled in from SurveyHTTP, which otherwise needs
// libmicrohttpd) and a list's `limit` and `after` (PageQuery). The input is the Authorization
// value; split at its first NUL byte it is also `limit` and `after`.
import SurveyDomain

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let s = String(decoding: bytes, as: UTF8.self)
    bearer(s)
    let parts = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    page(limit: parts[0], after: parts.count > 1 ? parts[1] : nil)
    return 0
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
