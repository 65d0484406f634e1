// fuzz-sources: Sources/SurveyHTTP/BlockingPool.swift Sources/SurveyHTTP/BodySink.swift Sources/SurveyHTTP/BodySource.swift
// fuzz-sources: Sources/SurveyHTTP/ClosingAnswer.swift Sources/SurveyHTTP/DeferredResponse.swift Sources/SurveyHTTP/ErrorCode+HTTPStatus.swift
// fuzz-sources: Sources/SurveyHTTP/Exchange.swift Sources/SurveyHTTP/ExchangeState.swift Sources/SurveyHTTP/FormDecoder.swift
// fuzz-sources: Sources/SurveyHTTP/FormFields.swift Sources/SurveyHTTP/FormFile.swift Sources/SurveyHTTP/HTTPRequest.swift
// fuzz-sources: Sources/SurveyHTTP/HTTPResponse.swift Sources/SurveyHTTP/HTTPServer.swift Sources/SurveyHTTP/LogWriter.swift
// fuzz-sources: Sources/SurveyHTTP/MHDCallbacks.swift Sources/SurveyHTTP/ProblemDocument.swift Sources/SurveyHTTP/ProtocolRefusal.swift
// fuzz-sources: Sources/SurveyHTTP/RequestLog.swift Sources/SurveyHTTP/Router.swift
//
// A console form as the server receives it: the real HTTP engine on loopback (libmicrohttpd,
// its post processor, `FormDecoder` and the exchange's states), one POST per input. The first
// byte picks the Content-Type (urlencoded, multipart with the boundary `B`, multipart with a
// boundary taken from the input, none, another type); the rest is the body. Property: every
// request is answered — 200 with the fields decoded, 400 or 413 — and the server keeps serving.
// Slower than the in-memory harnesses (a connection per input, closed without TIME_WAIT).
import Foundation
import SurveyDomain

private let server: HTTPServer = {
    var router = Router()
    router.add("POST", "/form", access: "anyone", form: FormDecoder.Limits(maxBytes: 64 << 10)) { request in
        var count = request.form.pairs.count
        for (_, file) in request.form.files { count += (try file.bytes()).count >= 0 ? 1 : 0 }
        return .text(200, "\(count)")
    }
    var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
    configuration.pollingThreads = 2
    let s = HTTPServer(configuration: configuration, router: router, log: RequestLog(enabled: false))
    do { try s.start() } catch { fatalError("cannot start: \(error)") }
    return s
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(bytes.dropFirst())
    let contentType: String?
    switch bytes[0] % 5 {
    case 0: contentType = "application/x-www-form-urlencoded"
    case 1: contentType = "multipart/form-data; boundary=B"
    case 2:
        // Printable ASCII only: a header with control bytes is the HTTP parser's to refuse, not the form's.
        let b = String(decoding: body.prefix(while: { $0 != 0x0D }).prefix(80).filter { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
        contentType = "multipart/form-data; boundary=" + b
    case 3: contentType = nil
    default: contentType = "text/plain"
    }
    var head = "POST /form HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
    if let contentType { head += "Content-Type: \(contentType)\r\n" }
    head += "\r\n"
    let request = Array(head.utf8) + body
    // A connection refused or dropped under the fuzzer's pace (the per-address connection limit
    // holds connections the client already reset) is tried again once: an input that really
    // goes unanswered fails twice.
    guard let status = send(request, port: server.port) ?? { usleep(20_000); return send(request, port: server.port) }() else {
        fatalError("no answer for \(bytes.prefix(64))")
    }
    guard [200, 400, 413].contains(status) else { fatalError("status \(status) for \(bytes.prefix(64))") }
    return 0
}

/// Sends `request` on a new connection; the answer's status, or nil when none came.
private func send(_ request: [UInt8], port: UInt16) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var tv = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    // Closed without TIME_WAIT: a connection per input would otherwise use up the local ports.
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    var sent = 0
    while sent < request.count {
        let n = request.withUnsafeBytes { Foundation.send(fd, $0.baseAddress.map { $0 + sent }, request.count - sent, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { break }  // answered early (413) and closed: the answer is still read
        sent += n
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while answer.count < 12 {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        answer += buffer[0..<n]
    }
    guard answer.count >= 12, answer.starts(with: Array("HTTP/1.1 ".utf8)) else { return nil }
    return Int(String(decoding: answer[9..<12], as: UTF8.self))
}
