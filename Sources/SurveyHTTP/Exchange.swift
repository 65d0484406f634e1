import CMicroHTTPD

/// One request's state between libmicrohttpd's calls (stored in `con_cls`).
final class Exchange {
    let method: String
    let path: String
    let connection: OpaquePointer
    let started = ContinuousClock.now
    var headers: [String: String] = [:]
    var query: [String: String] = [:]
    /// Set once, when the request is routed (the log names the route and its parameters).
    var route: Router.Route?
    var params: [String: String] = [:]
    /// Which phase the request is in (`ExchangeState`): every later call of libmicrohttpd's asks it.
    var state = ExchangeState(.answered)
    var contentLengths: Set<String> = []
    var authorizationHeaders = 0
    var conflictingFraming: Bool {
        contentLengths.count > 1 || (!contentLengths.isEmpty && headers["transfer-encoding"] != nil)
    }
    let trustedProxies: Set<String>

    /// The peer's IPv4 address.
    lazy var peerAddress: String = {
        var buffer = [CChar](repeating: 0, count: 64)
        cmhd_client_address(connection, &buffer, buffer.count)
        return String(cString: buffer)
    }()

    /// The request came through a trusted reverse proxy: its forwarded headers are believed.
    var throughTrustedProxy: Bool {
        !trustedProxies.isEmpty && (headers["x-forwarded-for"] != nil || headers["x-forwarded-proto"] != nil)
            && trustedProxies.contains(peerAddress)
    }

    /// The client's address (what sign-in throttling counts by): through a trusted proxy, the
    /// last address of `X-Forwarded-For` — the one that proxy saw (earlier ones the client could
    /// have written); otherwise the peer's.
    var clientAddress: String {
        guard throughTrustedProxy, let forwarded = headers["x-forwarded-for"],
              let last = forwarded.split(separator: ",").last?.trimmingSpacesAndTabs, !last.isEmpty, last.utf8.count <= 64 else {
            return peerAddress
        }
        return last
    }

    init(method: String, path: String, connection: OpaquePointer, trustedProxies: Set<String>) {
        self.method = method
        self.path = path
        self.connection = connection
        self.trustedProxies = trustedProxies
        let me = Unmanaged.passUnretained(self).toOpaque()
        MHD_get_connection_values(connection, .HEADER_KIND, collectHeader, me)
        MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, collectQuery, me)
    }

    var head: RequestHead {
        // The peer's address is asked of libmicrohttpd only for routes that read it (console
        // sign-in, throttled per address): the API's hot paths do without the call and the string.
        RequestHead(method: method, path: path, route: route?.pattern ?? "", pathParameters: params, query: query, headers: headers,
                    clientAddress: route?.needsClientAddress == true ? clientAddress : "", throughTrustedProxy: throughTrustedProxy)
    }
}

/// A connection pointer handed to the thread that will resume it.
struct ConnectionHandle: @unchecked Sendable {
    // @unchecked: libmicrohttpd allows MHD_resume_connection from any thread.
    let pointer: OpaquePointer
}

let collectHeader: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let ex = Unmanaged<Exchange>.fromOpaque(cls).takeUnretainedValue()
    let name = lowercasedName(key)
    let v = value.map { String(cString: $0) } ?? ""
    if name == "content-length" { ex.contentLengths.insert(v.trimmingSpacesAndTabs) }
    if name == "authorization" { ex.authorizationHeaders += 1 }
    ex.headers[name] = v
    return .YES
}

/// A header name in ASCII lower case, in one pass over its bytes (`String.lowercased()` handles
/// all of Unicode and was most of the header collection's cost). Other bytes are kept as they are.
private func lowercasedName(_ key: UnsafePointer<CChar>) -> String {
    let n = strlen(key)
    return String(unsafeUninitializedCapacity: n) { out in
        for i in 0..<n {
            let b = UInt8(bitPattern: key[i])
            out[i] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b
        }
        return n
    }
}

let collectQuery: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let ex = Unmanaged<Exchange>.fromOpaque(cls).takeUnretainedValue()
    ex.query[String(cString: key)] = value.map { String(cString: $0) } ?? ""
    return .YES
}
