import SurveyDomain

/// A refusal that a protocol spoken over HTTP answers with its own status and headers (tus's
/// 409, 410, 412 with `Tus-Version`, a 409 carrying `Upload-Offset`): thrown by that door's code
/// and rendered by the HTTP engine, so the domain's `ApiError` stays free of HTTP.
public struct ProtocolRefusal: Error, Sendable {
    public let error: ApiError
    public let status: Int?
    public let headers: [(String, String)]

    public init(_ error: ApiError, status: Int? = nil, headers: [(String, String)] = []) {
        self.error = error; self.status = status; self.headers = headers
    }

    public var response: HTTPResponse { .problem(error, status: status, headers: headers) }
}
