import Foundation
import SurveyStorage

/// `/readyz` asks whether the database takes writes, which only a real (fsynced) commit can
/// tell. Anyone may ask, so a successful commit is reused for `interval`: the answers between
/// repeat it. A failed probe is not reused (it made no commit), so recovery shows at once.
/// Concurrent askers wait for one probe instead of each making one.
final class ReadinessProbe: @unchecked Sendable {
    // @unchecked: `last` is guarded by `lock`.
    private let lock = NSLock()
    private var last: (at: ContinuousClock.Instant, ready: Bool)?
    private let interval: Duration
    private let probe: @Sendable () -> Bool

    init(interval: Duration = .seconds(1), probe: @escaping @Sendable () -> Bool) {
        self.interval = interval
        self.probe = probe
    }

    func isReady() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        if let last, last.ready, now - last.at < interval { return true }
        let ready = probe()
        last = (ContinuousClock.now, ready)
        return ready
    }
}
