import Foundation
import Synchronization
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// Delivers the outbox. A loop finds each enabled webhook's oldest pending delivery that is due
/// and hands it to a worker; a webhook has at most one delivery in flight, so its events arrive in
/// commit order. Workers block in libcurl (at most `timeoutMillis`), never on a request thread:
/// a receiver that hangs holds one worker, not the server. Everything it knows is in the
/// database, so a restart (or kill -9) resumes where it was; an attempt cut off by one is made
/// again (at-least-once: receivers deduplicate by `webhook-id`).
public final class WebhookDispatcher: Sendable {
    public struct Configuration: Sendable {
        public var allowPrivate = false
        public var schedule = RetrySchedule.standard
        public var workers = 8
        public var timeoutMillis = 15_000
        /// How often the outbox is looked at when nothing woke the loop: the first attempt
        /// follows its commit within about this long.
        public var pollMillis = 200
        public init() {}
    }

    private let database: Database
    private let configuration: Configuration
    private struct State {
        var inFlight: Set<String> = []
        var queue: [DueDelivery] = []
        var stopping = false
        var threads = 0
        var idleLooks = 0
    }
    private let state = Mutex(State())
    /// Several processes on one PostgreSQL database: only the lease holder delivers.
    private let lease: Lease
    /// Wakes the loop (a delivery finished) and the workers (work queued).
    private let wake = NSCondition()

    public init(database: Database, configuration: Configuration = Configuration()) {
        self.database = database
        self.configuration = configuration
        self.lease = database.webhookDispatchLease()
        _ = ReceiverCall.initialized
    }

    public func start() {
        for i in 0..<configuration.workers { spawn("surveyd-whk\(i)") { [self] in work() } }
        spawn("surveyd-hooks") { [self] in loop() }  // thread names: at most 15 bytes
    }

    /// Stops looking for work. Attempts in progress get two seconds to finish and be recorded;
    /// one still waiting on its receiver after that is not recorded and is made again after the
    /// restart (the same `webhook-id`).
    public func stop() {
        wake.lock()
        state.withLock { $0.stopping = true }
        wake.broadcast()
        wake.unlock()
        let deadline = Date(timeIntervalSinceNow: 2)
        while state.withLock({ $0.threads }) > 0 && Date() < deadline { usleep(10_000) }
        lease.release()
    }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.threads += 1 }
        let t = Thread { [self] in
            ThreadName.set(name)
            body()
            state.withLock { $0.threads -= 1 }
        }
        t.stackSize = 1 << 20
        t.start()
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    /// Looks at the outbox that found nothing due and no delivery queued or under way. Until
    /// something is committed or a retry falls due, nothing more is sent (`/metrics`).
    public var idleLooks: Int { state.withLock { $0.idleLooks } }

    /// Waits until a look that began after this call found the dispatcher idle (see
    /// `idleLooks`); false after `seconds`. Two more idle looks than now: the second of them
    /// began after the first ended, so after this call.
    public func waitUntilIdle(seconds: Double) -> Bool {
        let start = idleLooks
        let deadline = Date(timeIntervalSinceNow: seconds)
        while idleLooks < start + 2 {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    private func loop() {
        // Per webhook (and its list of events): up to where the audit log holds nothing for it
        // beyond its cursor, so the next look starts there instead of at the cursor.
        var scanned: [String: Int64] = [:]
        while !stopping {
            let busy = state.withLock { $0.inFlight }
            var due: [DueDelivery] = []
            var looked = false
            if busy.count < configuration.workers && lease.isHeld {
                let now = database.clock.nowMillis()
                looked = (try? database.read(followingAudit: true) { db -> Bool in
                    for w in try db.enabledWebhooks() where !busy.contains(w.webhookId) {
                        let key = w.webhookId + " " + w.events.joined(separator: " ")
                        let (next, scannedTo) = try db.nextDelivery(of: w, now: now, scanFrom: scanned[key] ?? 0)
                        scanned[key] = scannedTo
                        if let next { due.append(next) }
                        if busy.count + due.count >= configuration.workers { break }
                    }
                    return true
                }) ?? false
            }
            if looked && busy.isEmpty && due.isEmpty { state.withLock { $0.idleLooks += 1 } }
            wake.lock()
            if !due.isEmpty {
                state.withLock { s in
                    for d in due {
                        s.inFlight.insert(d.webhook.webhookId)
                        s.queue.append(d)
                    }
                }
                wake.broadcast()
            }
            if !stopping { _ = wake.wait(until: Date(timeIntervalSinceNow: Double(configuration.pollMillis) / 1000)) }
            wake.unlock()
        }
    }

    private func work() {
        while true {
            wake.lock()
            guard let next = waitForDelivery() else { wake.unlock(); return }
            wake.unlock()
            deliver(next)
            wake.lock()
            state.withLock { _ = $0.inFlight.remove(next.webhook.webhookId) }
            wake.broadcast()  // the webhook's next delivery may go now
            wake.unlock()
        }
    }

    /// The next queued delivery, waiting for one (`wake` held); nil once stopping.
    private func waitForDelivery() -> DueDelivery? {
        while true {
            let (item, stop) = state.withLock { s -> (DueDelivery?, Bool) in
                s.queue.isEmpty ? (nil, s.stopping) : (s.queue.removeFirst(), false)
            }
            if stop { return nil }
            if let item { return item }
            wake.wait()
        }
    }

    /// One attempt, and what became of it written down.
    func deliver(_ due: DueDelivery) {
        let d = due.delivery, w = due.webhook
        let outcome = attempt(due)
        let schedule = configuration.schedule
        _ = try? database.deliveryWrite { tx in
            if let status = outcome.statusCode, (200...299).contains(status) {
                try tx.succeeded(d, statusCode: status)
            } else if outcome.statusCode == 410 {
                try tx.gone(d, orgId: w.orgId)
            } else if due.body == nil {
                try tx.failed(d, statusCode: nil, error: outcome.error ?? "failed", nextAttemptAt: nil)
            } else {
                let retryAfter = outcome.retryAfter.flatMap { RetrySchedule.retryAfterMillis($0, now: tx.now) }
                try tx.failed(d, statusCode: outcome.statusCode, error: outcome.error ?? "failed",
                              nextAttemptAt: schedule.nextAttempt(afterFailedAttempts: Int(d.attempts) + 1, now: tx.now, retryAfterMillis: retryAfter))
            }
        }
    }

    private func attempt(_ due: DueDelivery) -> ReceiverCall.Outcome {
        guard let body = due.body else {
            // Kept as a failure with its reason (never retried: the data will not come back).
            return ReceiverCall.Outcome(error: "the event's data could not be read")
        }
        guard case .target(let target) = WebhookTarget.parse(due.webhook.url) else {
            return ReceiverCall.Outcome(error: "the webhook's URL cannot be used")
        }
        let address: String
        switch target.check(allowPrivate: configuration.allowPrivate) {
        case .unresolved: return ReceiverCall.Outcome(error: "\(target.host) could not be resolved")
        case .refused(let why): return ReceiverCall.Outcome(error: why)
        case .allowed(let a): address = a
        }
        let now = database.clock.nowMillis()
        let timestamp = now / 1000
        let headers = [
            "Content-Type: application/json",
            "webhook-id: \(due.delivery.eventId)",
            "webhook-timestamp: \(timestamp)",
            "webhook-signature: " + WebhookSignature.header(secrets: due.webhook.signingSecrets(now: now), id: due.delivery.eventId,
                                                            timestamp: timestamp, body: body),
        ]
        let literal = target.host == address
        return ReceiverCall.post(url: target.url, host: target.host, port: target.port, address: literal ? nil : address,
                                 headers: headers, body: body, timeoutMillis: configuration.timeoutMillis)
    }
}
