import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// What every service shares, and the table of routes. Each capability registers its own.
struct Services: Sendable {
    let database: Database
    let gate: WriteGate
    let metrics: Metrics
    let blobs: BlobStore
    let limits: Limits
    let keys: KeyedWrites
    /// Resumable uploads with a request (PATCH, DELETE) or the expiry sweep at work on them.
    let uploadLocks: BusySet
    let readiness: ReadinessProbe
    let definitions = DefinitionCache()
    /// Server time: the store's clock, so the gate and the services never disagree.
    var clock: any ServerClock { database.clock }

    struct Limits: Sendable {
        /// A file is refused past this unless its question's `maxBytes` is lower.
        var maxFileBytes: Int = 100 << 20
        /// How long an unfinished resumable upload is kept.
        var resumableLifetimeMillis: Int64 = 24 * 3_600_000
        /// Declared bytes of unfinished resumable uploads one collector may hold (1030 past it):
        /// partial files cannot fill the disk faster than they are finished or expire.
        var maxUnfinishedBytesPerCaller: Int64 = 1 << 30
        /// Keyed requests one caller may have in flight (1030 past it).
        var maxKeyedInFlight: Int = 100
    }

    func register(into router: inout Router) {
        HealthService(services: self).register(into: &router)
        OrgService(services: self).register(into: &router)
        UserService(services: self).register(into: &router)
        SurveyService(services: self).register(into: &router)
        ResponseService(services: self).register(into: &router)
        let uploads = UploadService(services: self)
        uploads.register(into: &router)
        ResumableUploadService(services: self, uploads: uploads, busy: uploadLocks).register(into: &router)
        TaskService(services: self).register(into: &router)
        ReviewService(services: self).register(into: &router)
        ChangesService(services: self).register(into: &router)
    }

    // MARK: - The first two checks of every request

    /// Step 1: the bearer token → a caller (1007 for missing, unknown or revoked).
    func authenticate(_ request: HTTPRequest) throws -> Caller { try authenticate(request.head) }

    func authenticate(_ request: RequestHead) throws -> Caller {
        try database.read { try authenticate(request, in: $0) }
    }

    /// `authenticate` within a read the caller is already making.
    func authenticate(_ request: RequestHead, in db: ReadContext) throws -> Caller {
        guard let token = request.bearerToken, !token.isEmpty, token.utf8.count <= 512 else {
            throw ApiError(.unauthenticated, "A bearer token is required.")
        }
        let hash = Tokens.hash(token)
        guard let found = try db.tokenOwner(hash: hash),
              Digest.constantTimeEqual(found.storedHash, hash) else {
            throw ApiError(.unauthenticated, "The token is unknown or revoked.")
        }
        if found.owner.isOperator { return .operatorToken(tokenId: found.owner.tokenId) }
        return .user(found.owner.user!, tokenId: found.owner.tokenId)
    }

    /// Step 2 (tenancy): a user of this organization, else the 404 of a thing that does not exist.
    func member(_ caller: Caller, of orgId: String) throws -> UserRecord {
        guard let user = caller.user, user.orgId == orgId else { throw ApiError.notFound() }
        return user
    }

    /// Step 2 (role): the caller can see the organization but may need a role (1006).
    func member(_ caller: Caller, of orgId: String, withAnyOf roles: Role...) throws -> UserRecord {
        try member(caller, of: orgId, withAnyOf: roles)
    }

    /// The same; no roles listed means any member.
    func member(_ caller: Caller, of orgId: String, withAnyOf roles: [Role]) throws -> UserRecord {
        let user = try member(caller, of: orgId)
        guard roles.isEmpty || roles.contains(where: { user.has($0) }) else {
            throw ApiError(.forbidden, "This needs the role \(roles.map(\.rawValue).joined(separator: " or ")).")
        }
        return user
    }

    func requireOperator(_ caller: Caller) throws {
        guard caller.isOperator else { throw ApiError(.forbidden, "Only an operator may do this.") }
    }
}

extension HTTPResponse {
    /// 201 with `Location`.
    static func created(_ location: String, _ body: JSONValue) -> HTTPResponse {
        .json(201, body, headers: [("Location", location)])
    }
}
