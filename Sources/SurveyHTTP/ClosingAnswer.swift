import CMicroHTTPD
import Foundation

/// Writes an answer straight onto a connection's socket, for the one case libmicrohttpd cannot:
/// with 0.9.75's polling threads, a parked (suspended) request whose client half-closed after
/// sending is read first thing after the resume; the read sees the FIN and the connection is
/// closed before the handler's final call can queue the answer. libmicrohttpd tells the
/// completion callback before it shuts the socket, so the answer — already committed — is sent
/// from there, with `Connection: close`. Bounded in time: a client that reads nothing gets cut off.
enum ClosingAnswer {
    static let deadline: Duration = .seconds(2)

    static func send(_ response: HTTPResponse, on fd: Int32, headOnly: Bool) {
        guard fd >= 0 else { return }
        let bodySize = response.file?.size ?? response.body.count
        var head = "HTTP/1.1 \(response.status) \(reason(response.status))\r\n"
        for (k, v) in response.headers where k.lowercased() != "connection" && k.lowercased() != "content-length" {
            head += "\(k): \(v)\r\n"
        }
        head += "Content-Length: \(bodySize)\r\nConnection: close\r\n\r\n"
        var bytes = Array(head.utf8)
        if !headOnly && response.file == nil { bytes += response.body }
        let until = ContinuousClock.now + deadline
        guard sendAll(bytes, fd, until) else { return }
        if !headOnly, let file = response.file {
            var offset: off_t = 0
            while offset < file.size, ContinuousClock.now < until {
                let n = sendfile(fd, file.descriptor, &offset, file.size - Int(offset))
                if n < 0 && errno != EAGAIN && errno != EINTR { break }
                if n <= 0 && !waitWritable(fd, until) { break }
            }
        }
        if let file = response.file { close(file.descriptor) }
    }

    private static func sendAll(_ bytes: [UInt8], _ fd: Int32, _ until: ContinuousClock.Instant) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno != EAGAIN && errno != EINTR { return false }
            if !waitWritable(fd, until) { return false }
        }
        return true
    }

    private static func waitWritable(_ fd: Int32, _ until: ContinuousClock.Instant) -> Bool {
        let left = until - ContinuousClock.now
        guard left > .zero else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ms = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
        return poll(&p, 1, ms) > 0 && p.revents & Int16(POLLOUT) != 0
    }

    private static func reason(_ status: Int) -> String {
        MHD_get_reason_phrase_for(UInt32(status)).map { String(cString: $0) } ?? ""
    }
}
