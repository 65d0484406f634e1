import Foundation

/// Whose work a command is: it is only ever sent with that person's sign-in, and only shown to them.
public struct Owner: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The server's base URL, e.g. `https://surveys.example.org` (no trailing slash).
    public let server: String
    public let organization: String
    public let user: String

    public init(server: String, organization: String, user: String) {
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.organization = organization
        self.user = user
    }

    public var description: String { "\(user) in \(organization) at \(server)" }
}

/// A signed-in owner and the token the app holds for them (from its keychain). The token lives in
/// memory only: the outbox never writes a token to disk.
public struct Session: Sendable {
    public let owner: Owner
    public let token: String

    public init(owner: Owner, token: String) {
        self.owner = owner
        self.token = token
    }

    /// What the store keeps to recognise a refused token (never the token itself).
    var tokenSHA256: String { SHA256Digest.hex(Array(token.utf8)) }
}
