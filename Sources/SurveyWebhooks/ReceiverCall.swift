import CCurl
import Foundation

/// One POST to a receiver through libcurl: to the address the target guard checked (no lookup
/// of its own), no redirects, no proxy from the environment, TLS verified, a hard timeout, and
/// at most 64 KiB of the receiver's answer read.
struct ReceiverCall {
    struct Outcome: Sendable {
        /// nil when no HTTP answer came (connection refused, timeout, TLS).
        var statusCode: Int?
        var retryAfter: String?
        /// What went wrong, as a sentence for the deliveries listing; nil on a 2xx.
        var error: String?
    }

    static let maxAnswerBytes = 64 << 10

    /// Once per process, before any thread uses libcurl.
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// `address`: where `host` must connect (nil for a host that is an address itself).
    static func post(url: String, host: String, port: Int, address: String?, headers: [String], body: [UInt8],
                     timeoutMillis: Int) -> Outcome {
        guard initialized, let h = curl_easy_init() else { return Outcome(error: "libcurl could not start") }
        defer { curl_easy_cleanup(h) }
        let answer = Answer()
        let context = Unmanaged.passRetained(answer)
        defer { context.release() }

        var list: UnsafeMutablePointer<curl_slist>?
        for line in headers + ["Expect:"] { list = curl_slist_append(list, line) }
        defer { curl_slist_free_all(list) }
        var pin: UnsafeMutablePointer<curl_slist>?
        if let address {
            let bracketed = address.contains(":") ? "[\(address)]" : address
            pin = curl_slist_append(nil, "\(host):\(port):\(bracketed)")
        }
        defer { curl_slist_free_all(pin) }

        ccurl_set_string(h, CURLOPT_URL, url)
        ccurl_set_long(h, CURLOPT_NOSIGNAL, 1)
        ccurl_set_long(h, CURLOPT_TIMEOUT_MS, timeoutMillis)
        ccurl_set_long(h, CURLOPT_FOLLOWLOCATION, 0)
        ccurl_set_string(h, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_set_string(h, CURLOPT_NOPROXY, "*")
        ccurl_set_string(h, CURLOPT_USERAGENT, "surveyd-webhooks")
        if let pin { ccurl_set_list(h, CURLOPT_RESOLVE, pin) }
        ccurl_set_list(h, CURLOPT_HTTPHEADER, list)
        ccurl_set_long(h, CURLOPT_POST, 1)
        ccurl_set_size(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
        _ = body.withUnsafeBufferPointer { ccurl_set_pointer(h, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
        ccurl_set_callback(h, CURLOPT_HEADERFUNCTION, onHeader)
        ccurl_set_pointer(h, CURLOPT_HEADERDATA, context.toOpaque())
        ccurl_set_callback(h, CURLOPT_WRITEFUNCTION, onData)
        ccurl_set_pointer(h, CURLOPT_WRITEDATA, context.toOpaque())

        let code = curl_easy_perform(h)
        var status = 0
        ccurl_get_long(h, CURLINFO_RESPONSE_CODE, &status)
        // An answer cut off after 64 KiB still has its status line: the status decides.
        guard status > 0 else {
            let reason = code == CURLE_OPERATION_TIMEDOUT ? "no answer within \(timeoutMillis / 1000) s" : String(cString: curl_easy_strerror(code))
            return Outcome(error: reason)
        }
        let ok = (200...299).contains(status)
        return Outcome(statusCode: status, retryAfter: answer.retryAfter,
                       error: ok ? nil : "the receiver answered \(status)" + ((300...399).contains(status) ? " (redirects are not followed)" : ""))
    }

    /// What the callbacks collect, on the calling thread only.
    private final class Answer {
        var retryAfter: String?
        var bytes = 0
    }

    private static let onHeader: ccurl_data_callback = { data, size, count, context in
        let n = size * count
        guard let data, let context else { return n }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
        if line.lowercased().hasPrefix("retry-after:") {
            Unmanaged<Answer>.fromOpaque(context).takeUnretainedValue().retryAfter =
                line.dropFirst("retry-after:".count).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return n
    }

    private static let onData: ccurl_data_callback = { _, size, count, context in
        let n = size * count
        guard let context else { return n }
        let answer = Unmanaged<Answer>.fromOpaque(context).takeUnretainedValue()
        answer.bytes += n
        return answer.bytes > maxAnswerBytes ? 0 : n  // 0 ends the transfer
    }
}
