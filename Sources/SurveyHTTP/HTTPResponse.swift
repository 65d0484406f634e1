import Foundation
import SurveyDomain

/// What a handler answers. `errorCode` and `logFields` feed the request log line only.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var errorCode: Int?
    public var logFields: [String: String]
    /// A file body sent from an open descriptor (closed by the server after sending).
    public var file: (descriptor: Int32, size: Int)?
    /// A body produced while it is sent (`stream`).
    public var stream: (any BodySource)?
    public var streamSize: Int?
    /// Set by `later`: the real answer comes when this completes.
    public var deferred: DeferredResponse?

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], errorCode: Int? = nil,
                logFields: [String: String] = [:]) {
        self.status = status; self.headers = headers; self.body = body
        self.errorCode = errorCode; self.logFields = logFields
    }

    /// The answer is not ready yet (a write queued on the writer): the connection waits, without
    /// holding a thread, until `deferred` completes.
    public static func later(_ deferred: DeferredResponse) -> HTTPResponse {
        var r = HTTPResponse(status: 0)
        r.deferred = deferred
        return r
    }

    /// A JSON body, written canonically (sorted keys, no insignificant whitespace).
    public static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: CanonicalJSON.encode(value))
    }

    /// RFC 9457 problem details for a contract error. `status` overrides the code's own HTTP
    /// status where the protocol demands another (405, tus's 410, 412, 460).
    public static func problem(_ error: ApiError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        let status = status ?? error.code.httpStatus
        var h = [("Content-Type", "application/problem+json")] + headers
        if let r = error.retryAfterSeconds { h.append(("Retry-After", String(r))) }
        return HTTPResponse(status: status, headers: h, body: CanonicalJSON.encode(error.problemDocument(status: status)),
                            errorCode: error.code.rawValue)
    }

    /// How the HTTP engine answers what a handler threw: a protocol's own refusal as it asks,
    /// anything else as problem details of the error `mapped` makes of it.
    static func refusal(_ error: any Error, mapped: (any Error) -> ApiError, headers: [(String, String)] = []) -> HTTPResponse {
        if let r = error as? ProtocolRefusal { return .problem(r.error, status: r.status, headers: r.headers + headers) }
        return .problem(mapped(error), headers: headers)
    }

    /// The bytes of a file on disk, sent without loading them.
    public static func file(path: String, headers: [(String, String)]) -> HTTPResponse? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else { close(fd); return nil }
        var r = HTTPResponse(status: 200, headers: headers)
        r.file = (fd, Int(st.st_size))
        return r
    }

    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }
}
