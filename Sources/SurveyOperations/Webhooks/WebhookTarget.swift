import Foundation
import SurveyDomain

/// Where a webhook delivers, and the guard against server-side request forgery: a receiver's
/// URL must not point the server at its own network. The host is resolved and refused when any
/// of its addresses is private, loopback, link-local, unique-local, shared (CGNAT), multicast or
/// unspecified — at creation and again before every attempt, which then connects to the address
/// this check saw (no second lookup a DNS answer could change in between).
public struct WebhookTarget: Sendable, Equatable {
    public let url: String
    public let isHTTPS: Bool
    /// Without brackets for an IPv6 literal.
    public let host: String
    public let port: Int

    public static let maxURLLength = 2048

    public enum Parsed: Sendable {
        case target(WebhookTarget)
        case refused(FieldError)
    }

    /// The URL if it is one a delivery can go to, else the sentence that says why not.
    public static func parse(_ url: String) -> Parsed {
        func refuse(_ message: String) -> Parsed { .refused(FieldError(path: "url", message: message)) }
        guard url.unicodeScalars.count <= maxURLLength else { return refuse("at most \(maxURLLength) characters") }
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return refuse("must be an http:// or https:// URL")
        }
        guard var host = c.host else { return refuse("must name a host") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        // After the brackets are gone: `http://[]:80/` names no host either (found by fuzzing).
        guard !host.isEmpty else { return refuse("must name a host") }
        guard c.user == nil, c.password == nil else { return refuse("must not carry a user name or password; verify deliveries by their signature") }
        guard c.fragment == nil else { return refuse("must not have a #fragment") }
        let port = c.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else { return refuse("the port must be 1-65535") }
        return .target(WebhookTarget(url: url, isHTTPS: scheme == "https", host: host.lowercased(), port: port))
    }

    /// The host's addresses as text (IPv6 without brackets); empty when it cannot be resolved.
    public func resolve() -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var out: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            if let text = Self.text(n.pointee.ai_addr), !out.contains(text) { out.append(text) }
            node = n.pointee.ai_next
        }
        return out
    }

    public enum Check: Sendable, Equatable {
        /// Connect to this address.
        case allowed(address: String)
        /// An address in a refused range: the sentence names it.
        case refused(String)
        case unresolved
    }

    /// Resolves the host and checks every address it has.
    public func check(allowPrivate: Bool) -> Check {
        let addresses = resolve()
        guard let first = addresses.first else { return .unresolved }
        if !allowPrivate, let bad = addresses.first(where: { !Self.isPublic($0) }) {
            return .refused("\(host) resolves to \(bad), a private, loopback or link-local address; the server refuses such targets unless it runs with --webhooks-allow-private")
        }
        return .allowed(address: first)
    }

    /// False for every address range a server must not be pointed at from outside.
    public static func isPublic(_ address: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return isPublic(v4: withUnsafeBytes(of: v4.s_addr) { Array($0) })
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return false }
        let b = withUnsafeBytes(of: v6) { Array($0) }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return isPublic(v4: Array(b[12..<16])) }  // ::ffff:a.b.c.d
        if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1 and the old IPv4-compatible form
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B { return isPublic(v4: Array(b[12..<16])) }  // NAT64
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return false }  // documentation
        return true
    }

    private static func isPublic(v4 b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false  // shared address space (CGNAT)
        case (169, 254): return false
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where b[2] == 0: return false  // IETF protocol assignments
        case (198, 18...19): return false  // benchmarking
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    private static func text(_ sa: UnsafeMutablePointer<sockaddr>?) -> String? {
        guard let sa else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            var a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case AF_INET6:
            var a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            guard inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(cString: buffer)
    }
}
