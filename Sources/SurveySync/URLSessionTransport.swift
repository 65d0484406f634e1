import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport apps use: URLSession. It never follows a redirect: a followed redirect carries the
/// `Authorization` header to wherever `Location` points, and surveyd never redirects, so the 3xx
/// itself is the answer the engine gets.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession
    private let closeConnections: Bool

    /// `timeout`: how long one request may take before it counts as unanswered.
    /// `closeConnections`: ask the server to close each connection after its answer (no reuse),
    /// so every request opens its own connection; tests use it to put faults on chosen requests.
    public init(timeout: TimeInterval = 60, closeConnections: Bool = false) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 4
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
        self.closeConnections = closeConnections
    }

    deinit { session.invalidateAndCancel() }

    public func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if closeConnections { urlRequest.setValue("close", forHTTPHeaderField: "Connection") }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) { urlRequest.httpBody = Data(request.body) }
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return IncomingAnswer(status: http.statusCode, headers: headers, body: Array(data))
    }
}

/// Answers every redirect with nil: the task ends with the 3xx itself as its response.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
