import Foundation
import Synchronization
import SurveyDomain
import SurveyStorage

/// Sign-in attempts counted per account (email) and per address: after `limit` attempts within
/// `window` that did not succeed, further attempts are refused until the window has passed —
/// whether or not the password would be right, so guessing gains nothing. An attempt counts from
/// *before* its password is checked (a success takes it back), so concurrent guesses cannot all
/// slip in while the first ones are still being checked. On SQLite (one process) the count is in
/// memory, and a restart forgets, which costs an attacker a restart they cannot cause; on
/// PostgreSQL it is in the database (`SignInAttempts`), so every process counts the same attempts.
public final class SignInThrottle: Sendable {
    public let limit: Int
    public let windowMillis: Int64
    private let attempts = Mutex<[String: [(id: String, at: Int64)]]>([:])
    private let shared: SignInAttempts?

    public init(limit: Int = 10, windowMillis: Int64 = 15 * 60 * 1000, shared: SignInAttempts? = nil) {
        self.limit = limit
        self.windowMillis = windowMillis
        self.shared = shared
    }

    /// Counts an attempt under `keys` and returns its id for `succeeded`, or refuses with 1030
    /// and the seconds to wait when one of the keys has used up its attempts.
    public func begin(_ keys: [String], now: Int64) throws -> String {
        let id = Ids.make("sia", nowMillis: now)
        let wait = try shared.map { try $0.begin(id: id, keys: keys, limit: limit, windowMillis: windowMillis, now: now) }
            ?? inMemory(id: id, keys: keys, now: now)
        if let wait {
            let seconds = Int((wait + 999) / 1000)
            throw ApiError(.tooManyPendingRequests, "Too many sign-in attempts. Try again in \(max(1, seconds / 60)) minute\(seconds >= 120 ? "s" : "").",
                           retryAfterSeconds: seconds)
        }
        return id
    }

    /// `SignInAttempts.begin` in this process's memory.
    private func inMemory(id: String, keys: [String], now: Int64) -> Int64? {
        attempts.withLock { a in
            var wait: Int64 = 0
            for k in keys {
                let recent = (a[k] ?? []).filter { $0.at > now - windowMillis }
                a[k] = recent.isEmpty ? nil : recent
                if recent.count >= limit, let oldest = recent.first { wait = max(wait, oldest.at + windowMillis - now) }
            }
            guard wait == 0 else { return wait }
            if a.count > 100_000 { a.removeAll() }  // a flood of addresses must not grow memory without bound
            for k in keys { a[k, default: []].append((id, now)) }
            return nil
        }
    }

    /// The attempt succeeded, or its password was never checked: it no longer counts.
    public func succeeded(_ id: String) {
        if let shared {
            try? shared.forget(id: id)
            return
        }
        attempts.withLock { a in
            for (k, list) in a {
                let kept = list.filter { $0.id != id }
                if kept.count != list.count { a[k] = kept.isEmpty ? nil : kept }
            }
        }
    }
}
