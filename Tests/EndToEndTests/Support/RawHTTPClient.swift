import Foundation
import SurveyDomain

/// A deliberately small HTTP/1.1 client over a POSIX socket, so tests control every byte:
/// oversized bodies, disconnects mid-body, exact header values. One request per connection.
struct Reply {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]
    var json: JSONValue? { try? JSONParser.parse(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers[name.lowercased()] }
    var errorCode: Int? { json?["errorCode"]?.intValue }
}

struct RawHTTPClient {
    let port: UInt16

    /// `from`: a loopback source address (127.0.0.x), to look like several clients.
    func connect(from source: String? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let rc = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { close(fd); throw POSIXError(.EADDRNOTAVAIL) }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        return fd
    }

    /// Writes all bytes it can; false when the peer closed (e.g. after answering 413 early).
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    static func readReply(_ fd: Int32) throws -> Reply {
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            data.append(contentsOf: buf[0..<n])
            if let r = parse(data), r.complete { return r.reply }
        }
        guard let r = parse(data) else { throw POSIXError(.ECONNRESET) }
        return r.reply
    }

    static func parse(_ data: [UInt8]) -> (reply: Reply, complete: Bool)? {
        let sep: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, data.count - 3)).first(where: { Array(data[$0..<$0 + 4]) == sep }) else { return nil }
        let head = String(decoding: data[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = Array(data[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            guard let (decoded, done) = dechunk(body) else { return nil }
            return (Reply(status: status, headers: headers, body: decoded), done)
        }
        let length = headers["content-length"].flatMap(Int.init) ?? body.count
        return (Reply(status: status, headers: headers, body: Array(body.prefix(length))), body.count >= length)
    }

    /// A chunked body's bytes so far, and whether its last (empty) chunk has arrived. A body
    /// cut short (a streamed export that failed) is returned without `done`.
    static func dechunk(_ data: [UInt8]) -> ([UInt8], done: Bool)? {
        var out: [UInt8] = [], i = 0
        while true {
            guard let lineEnd = (i..<max(i, data.count - 1)).first(where: { data[$0] == 13 && data[$0 + 1] == 10 }) else { return (out, false) }
            let sizeText = String(decoding: data[i..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            if size == 0 { return (out, true) }
            let start = lineEnd + 2
            guard start + size <= data.count else { out += data[start..<data.count]; return (out, false) }
            out += data[start..<start + size]
            i = start + size + 2
        }
    }

    /// `from`: the loopback address to send from (127.0.0.0/8), e.g. to be another client address.
    func request(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil, body: [UInt8]? = nil,
                 headers: [String: String] = [:], from source: String? = nil) throws -> Reply {
        let payload = body ?? json.map(CanonicalJSON.encode) ?? []
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if json != nil && headers["Content-Type"] == nil { head += "Content-Type: application/json\r\n" }
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !payload.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" { head += "Content-Length: \(payload.count)\r\n" }
        head += "\r\n"
        let fd = try connect(from: source)
        defer { close(fd) }
        Self.sendAll(fd, Array(head.utf8))
        Self.sendAll(fd, payload)
        let reply = try Self.readReply(fd)
        ResponseRecorder.shared?.record(method: method, path: path, reply: reply)
        return reply
    }

    /// Polls `/healthz` until it answers 200 (true) or `seconds` pass (false): a server starting.
    func becomesHealthy(within seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? get("/healthz"))?.status == 200 { return true }
            usleep(20_000)
        }
        return false
    }

    func get(_ path: String, token: String? = nil) throws -> Reply { try request("GET", path, token: token) }
    func post(_ path: String, token: String?, _ json: JSONValue, headers: [String: String] = [:]) throws -> Reply {
        try request("POST", path, token: token, json: json, headers: headers)
    }
    func put(_ path: String, token: String?, _ json: JSONValue) throws -> Reply { try request("PUT", path, token: token, json: json) }
    func delete(_ path: String, token: String?) throws -> Reply { try request("DELETE", path, token: token) }
}

/// With SURVEYD_RECORD_RESPONSES=FILE, every answer the tests see is appended to FILE as one
/// JSON line; scripts/validate_recorded.py then checks each body against Schemas/.
final class ResponseRecorder: @unchecked Sendable {
    // @unchecked: writes are serialised by `lock`.
    static let shared: ResponseRecorder? = ProcessInfo.processInfo.environment["SURVEYD_RECORD_RESPONSES"].map(ResponseRecorder.init)
    private let lock = NSLock()
    private let fd: Int32

    init(path: String) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    }

    func record(method: String, path: String, reply: Reply) {
        guard fd >= 0 else { return }
        let line: JSONValue = [
            "method": .string(method), "path": .string(path), "status": .number(Double(reply.status)),
            "contentType": .string(reply.header("content-type") ?? ""),
            "body": .string(String(decoding: reply.body, as: UTF8.self)),
        ]
        var bytes = CanonicalJSON.encode(line)
        bytes.append(10)
        lock.lock()
        defer { lock.unlock() }
        bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    }
}
