import Foundation
import SurveyDomain
import SurveyStorage

/// `/readyz` asks whether the database takes writes, which only a real (fsynced) commit can
/// tell. Anyone may ask, so a successful commit is reused for `intervalMillis` of server time:
/// the answers between repeat it. A failed probe is not reused (it made no commit), so recovery
/// shows at once. Concurrent askers wait for one probe instead of each making one.
final class ReadinessProbe: @unchecked Sendable {
    // @unchecked: `last` and `probesMade` are guarded by `lock`.
    private let lock = NSLock()
    private var last: (at: Int64, ready: Bool)?
    private var made = 0
    private let intervalMillis: Int64
    private let clock: any ServerClock
    private let probe: @Sendable () -> Bool

    init(intervalMillis: Int64 = 1_000, clock: any ServerClock, probe: @escaping @Sendable () -> Bool) {
        self.intervalMillis = intervalMillis
        self.clock = clock
        self.probe = probe
    }

    /// Probes made so far (tests count them).
    var probesMade: Int { lock.withLock { made } }

    func isReady() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        // A clock set back makes the elapsed time negative: probe again rather than trust it.
        if let last, last.ready, case let elapsed = clock.nowMillis() - last.at, elapsed >= 0, elapsed < intervalMillis { return true }
        let ready = probe()
        made += 1
        last = (clock.nowMillis(), ready)
        return ready
    }
}
