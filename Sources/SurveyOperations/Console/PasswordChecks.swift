import Foundation
import Synchronization
import SurveyDomain

/// How many password hashes and checks run at once. Each holds 19 MiB (`Passwords`) and sign-in
/// is open to anyone, so past `limit` the next one is refused (429 / 1030, `Retry-After: 1`)
/// instead of the memory growing with the attackers' connections.
public final class PasswordChecks: Sendable {
    public let limit: Int
    private let running = Atomic<Int>(0)

    public init(limit: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) { self.limit = limit }

    public func run<T>(_ body: () throws -> T) throws -> T {
        guard running.add(1, ordering: .acquiringAndReleasing).newValue <= limit else {
            running.subtract(1, ordering: .acquiringAndReleasing)
            throw ApiError(.tooManyPendingRequests, "The server is checking as many passwords as it can at once. Try again in a second.",
                           retryAfterSeconds: 1)
        }
        defer { running.subtract(1, ordering: .acquiringAndReleasing) }
        return try body()
    }
}
