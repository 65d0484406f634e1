import Foundation
import Synchronization

/// Prometheus counters and histograms kept in memory (reset at restart, as Prometheus expects).
/// Every series carries the label `process`, naming the process that counted it, so that the
/// processes sharing one PostgreSQL database stay apart even when one address (a load balancer)
/// fronts them all; `surveyd_process_info` says what each name stands for.
public final class Metrics: Sendable {
    /// Which process this is, on every series: its name (`--instance-name`, or host:port), and
    /// on `surveyd_process_info` its host, pid and storage engine.
    public struct Identity: Sendable {
        public var name: String
        public var hostname: String
        public var pid: Int32
        public var engine: String
        /// Unix seconds.
        public var startedAt: Double
        public init(name: String, hostname: String, pid: Int32, engine: String, startedAt: Double) {
            self.name = name
            self.hostname = hostname
            self.pid = pid
            self.engine = engine
            self.startedAt = startedAt
        }
    }

    public enum Counter: String, CaseIterable, Sendable {
        case responsesAccepted = "surveyd_responses_accepted_total"
        case responsesReplayed = "surveyd_responses_replayed_total"
        case idempotencyConflicts = "surveyd_idempotency_conflicts_total"
        case subscriptionRefusals = "surveyd_subscription_refusals_total"
        case validationRefusals = "surveyd_validation_refusals_total"
        case reviewTransitions = "surveyd_review_transitions_total"
        case uploadBytes = "surveyd_upload_bytes_total"
    }

    private struct Histogram {
        static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
        var buckets = [Int](repeating: 0, count: bounds.count)
        var count = 0
        var sum = 0.0
        mutating func observe(_ v: Double) {
            for (i, b) in Self.bounds.enumerated() where v <= b { buckets[i] += 1 }
            count += 1
            sum += v
        }
    }

    private struct State {
        var counters: [Counter: Int] = [:]
        var requests: [String: Int] = [:]  // "route\u{0}status"
        var openRosa: [OpenRosaOutcome: Int] = [:]
        var latency: [String: Histogram] = [:]
        /// receivedAt - capturedAt, in seconds: how long work waited on the device.
        var syncAgeCount = 0
        var syncAgeSum = 0.0
        var syncAgeBuckets = [Int](repeating: 0, count: Metrics.ageBounds.count)
    }

    static let ageBounds: [Double] = [60, 600, 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400, 30 * 86400]

    /// Request threads update one of several shards (picked by thread), so they rarely contend;
    /// render() merges them. One shared Mutex here cost a quarter of all CPU under 64 concurrent
    /// requests (Synchronization.Mutex on Linux spins, then blocks on a priority-inheritance futex).
    private final class Shard: Sendable { let state = Mutex(State()) }
    private static let shardCount = 16
    public init() {}
    private let identity = Mutex<Identity?>(nil)
    /// Names the process on every series from now on (the server calls it once it listens).
    public func identify(_ identity: Identity) { self.identity.withLock { $0 = identity } }

    /// A label value in the text format: backslash, double quote and newline escaped.
    static func escaped(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
    private let shards: [Shard] = (0..<Metrics.shardCount).map { _ in Shard() }
    private var shard: Shard {
        // pthread_self() is the thread's descriptor address: distinct per live thread.
        let t = UInt(pthread_self())
        return shards[Int((t >> 12 ^ t >> 20) % UInt(Metrics.shardCount))]
    }

    public func add(_ c: Counter, _ n: Int = 1) { shard.state.withLock { $0.counters[c, default: 0] += n } }

    public func request(route: String, status: Int, seconds: Double) {
        let key = "\(route)\u{0}\(status)"
        shard.state.withLock {
            $0.requests[key, default: 0] += 1
            $0.latency[route, default: Histogram()].observe(seconds)
        }
    }

    /// What became of a submission at the OpenRosa door: accepted, a replay, or refused with a code.
    public enum OpenRosaOutcome: Hashable, Sendable {
        case accepted, replayed, partial
        case refused(code: Int)

        var labels: String {
            switch self {
            case .accepted: "outcome=\"accepted\""
            case .replayed: "outcome=\"replayed\""
            case .partial: "outcome=\"partial\""
            case .refused(let code): "outcome=\"refused\",code=\"\(code)\""
            }
        }
    }

    public func openRosaSubmission(_ outcome: OpenRosaOutcome) {
        shard.state.withLock { $0.openRosa[outcome, default: 0] += 1 }
    }

    public func syncAge(seconds: Double) {
        shard.state.withLock { s in
            s.syncAgeCount += 1
            s.syncAgeSum += seconds
            for (i, b) in Self.ageBounds.enumerated() where seconds <= b { s.syncAgeBuckets[i] += 1 }
        }
    }

    /// `writer`: group commits made and the jobs they held, from the store; `webhookIdleLooks`:
    /// the webhook dispatcher's looks that found nothing to send.
    public func render(writer: (commits: Int, jobs: Int)? = nil, reads: Int? = nil, webhookIdleLooks: Int? = nil) -> String {
        var s = State()
        for shard in shards {
            shard.state.withLock { t in
                for (k, v) in t.counters { s.counters[k, default: 0] += v }
                for (k, v) in t.requests { s.requests[k, default: 0] += v }
                for (k, v) in t.openRosa { s.openRosa[k, default: 0] += v }
                for (k, h) in t.latency {
                    var m = s.latency[k, default: Histogram()]
                    for i in m.buckets.indices { m.buckets[i] += h.buckets[i] }
                    m.count += h.count; m.sum += h.sum
                    s.latency[k] = m
                }
                s.syncAgeCount += t.syncAgeCount; s.syncAgeSum += t.syncAgeSum
                for i in s.syncAgeBuckets.indices { s.syncAgeBuckets[i] += t.syncAgeBuckets[i] }
            }
        }
        let identity = self.identity.withLock { $0 }
        let process = identity.map { "process=\"\(Self.escaped($0.name))\"" }
        /// `name{process="…",labels}`: the process first, then the series' own labels.
        func series(_ name: String, _ labels: String = "") -> String {
            let all = [process, labels.isEmpty ? nil : labels].compactMap { $0 }.joined(separator: ",")
            return all.isEmpty ? name : "\(name){\(all)}"
        }
        do {
            var out = ""
            if let identity {
                out += "# TYPE surveyd_process_info gauge\n"
                out += series("surveyd_process_info", "hostname=\"\(Self.escaped(identity.hostname))\",pid=\"\(identity.pid)\",engine=\"\(identity.engine)\"") + " 1\n"
                out += "# TYPE surveyd_process_start_time_seconds gauge\n"
                out += series("surveyd_process_start_time_seconds") + " \(identity.startedAt)\n"
            }
            for c in Counter.allCases {
                out += "# TYPE \(c.rawValue) counter\n\(series(c.rawValue)) \(s.counters[c, default: 0])\n"
            }
            out += "# TYPE surveyd_http_requests_total counter\n"
            for (k, v) in s.requests.sorted(by: { $0.key < $1.key }) {
                let parts = k.split(separator: "\u{0}")
                out += series("surveyd_http_requests_total", "route=\"\(parts[0])\",status=\"\(parts[1])\"") + " \(v)\n"
            }
            out += "# TYPE surveyd_http_request_duration_seconds histogram\n"
            for (route, h) in s.latency.sorted(by: { $0.key < $1.key }) {
                for (i, b) in Histogram.bounds.enumerated() {
                    out += series("surveyd_http_request_duration_seconds_bucket", "route=\"\(route)\",le=\"\(b)\"") + " \(h.buckets[i])\n"
                }
                out += series("surveyd_http_request_duration_seconds_bucket", "route=\"\(route)\",le=\"+Inf\"") + " \(h.count)\n"
                out += series("surveyd_http_request_duration_seconds_sum", "route=\"\(route)\"") + " \(h.sum)\n"
                out += series("surveyd_http_request_duration_seconds_count", "route=\"\(route)\"") + " \(h.count)\n"
            }
            out += "# TYPE surveyd_openrosa_submissions_total counter\n"
            for (labels, v) in s.openRosa.map({ ($0.key.labels, $0.value) }).sorted(by: { $0.0 < $1.0 }) {
                out += series("surveyd_openrosa_submissions_total", labels) + " \(v)\n"
            }
            out += "# TYPE surveyd_sync_age_seconds histogram\n"
            for (i, b) in Self.ageBounds.enumerated() {
                out += series("surveyd_sync_age_seconds_bucket", "le=\"\(Int(b))\"") + " \(s.syncAgeBuckets[i])\n"
            }
            out += series("surveyd_sync_age_seconds_bucket", "le=\"+Inf\"") + " \(s.syncAgeCount)\n"
            out += series("surveyd_sync_age_seconds_sum") + " \(s.syncAgeSum)\n" + series("surveyd_sync_age_seconds_count") + " \(s.syncAgeCount)\n"
            if let writer {
                out += "# TYPE surveyd_writer_commits_total counter\n\(series("surveyd_writer_commits_total")) \(writer.commits)\n"
                out += "# TYPE surveyd_writer_jobs_total counter\n\(series("surveyd_writer_jobs_total")) \(writer.jobs)\n"
            }
            if let reads {
                out += "# TYPE surveyd_store_reads_total counter\n\(series("surveyd_store_reads_total")) \(reads)\n"
            }
            if let webhookIdleLooks {
                out += "# TYPE surveyd_webhook_idle_looks_total counter\n\(series("surveyd_webhook_idle_looks_total")) \(webhookIdleLooks)\n"
            }
            return out
        }
    }
}
