import Foundation
import Synchronization
@testable import SurveySync

/// The real URLSession transport, writing down each request it sent and the answer it got, so a
/// test sees what the server answered (a 304 has no body) and not only that a request went.
final class RecordingTransport: HTTPTransport {
    struct Exchange: Sendable { let method: String; let path: String; let requestHeaders: [String: String]; let status: Int; let bodySize: Int }

    private let inner = URLSessionTransport(timeout: 30, closeConnections: true)
    private let seen = Mutex<[Exchange]>([])

    func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
        let answer = try await inner.send(request)
        seen.withLock {
            $0.append(Exchange(method: request.method, path: request.url.path, requestHeaders: request.headers, status: answer.status,
                               bodySize: answer.body.count))
        }
        return answer
    }

    /// The exchanges whose path ends with `suffix`, in order.
    func exchanges(endingWith suffix: String) -> [Exchange] { seen.withLock { $0.filter { $0.path.hasSuffix(suffix) } } }
}
