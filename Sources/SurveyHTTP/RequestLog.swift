import Foundation
import SurveyDomain

/// One JSON line per request on stdout: time, method, route, status, errorCode, duration and the
/// ids in the path. Never a header, a token, a query value or a body. Lines are written in
/// batches (`LogWriter`).
public struct RequestLog: Sendable {
    private let writer: LogWriter?
    public init(enabled: Bool = true) { writer = enabled ? LogWriter(descriptor: 1) : nil }

    /// Writes the lines still buffered; called once the server has stopped answering.
    func flush() { writer?.stop() }

    func write(ex: Exchange, response: HTTPResponse?, note: String? = nil) {
        guard let writer else { return }
        let elapsed = ContinuousClock.now - ex.started
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var line: [(String, JSONValue)] = [
            ("time", .string(Timestamp.format(Timestamp.nowMillis()))),
            ("method", .string(ex.method)),
            ("route", .string(ex.route?.pattern ?? "(unmatched)")),
            ("durationMs", .number((ms * 1000).rounded() / 1000)),
        ]
        line.reserveCapacity(8 + ex.params.count)
        // A later value for the same key wins (as it did when the line was a dictionary).
        func add(_ key: String, _ value: JSONValue) {
            if let i = line.firstIndex(where: { $0.0 == key }) { line[i].1 = value } else { line.append((key, value)) }
        }
        if let response {
            add("status", .number(Double(response.status)))
            if let c = response.errorCode { add("errorCode", .number(Double(c))) }
            for (k, v) in response.logFields { add(k, .string(v)) }
        }
        // A path parameter named `token` (an OpenRosa app's) or `…Secret` (an invitation link's) is
        // a credential: never logged.
        for (k, v) in ex.params where k != "token" && !k.hasSuffix("Secret") { add(k, .string(v)) }
        if let note { add("note", .string(note)) }
        var bytes = CanonicalJSON.encodeObject(line)
        bytes.append(10)
        writer.append(bytes)
    }
}
