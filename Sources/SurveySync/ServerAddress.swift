import Foundation

/// Where an address the server gives (a tus `Location`) may take the token: only to the configured
/// server's own origin. A followed address carries `Authorization`, as a followed redirect would.
enum ServerAddress {
    /// `reference` read against `server`: a path is on the server (appended to its address, as
    /// every request path is); anything else is resolved against the address. nil when the result
    /// is no URL or is on another origin (scheme, host, port): nothing may be sent there.
    static func onServer(_ reference: String, server: String) -> URL? {
        guard let base = URL(string: server), let origin = Origin(base) else { return nil }
        let resolved = reference.hasPrefix("/") && !reference.hasPrefix("//")
            ? URL(string: server + reference)
            : URL(string: reference, relativeTo: base)?.absoluteURL
        guard let resolved, Origin(resolved) == origin else { return nil }
        return resolved
    }

    /// Scheme, host and port, compared without case and with the scheme's default port filled in.
    struct Origin: Equatable {
        let scheme: String
        let host: String
        let port: Int?

        init?(_ url: URL) {
            guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
            self.scheme = scheme
            self.host = host
            port = url.port ?? ["http": 80, "https": 443][scheme]
        }
    }
}
