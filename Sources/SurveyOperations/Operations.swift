import SurveyDomain
import SurveyStorage

/// What every operation shares: the store, its gate, the blob store, the limits and the
/// counters. Each operation family (`submissions`, `reviews`, `uploads`, `surveys`, `tasks`,
/// `users`, `organizations`, `exports`, `webhooks`, entity lists… — the properties below) is a
/// door-independent type over it: the HTTP routes, the console,
/// exports and webhooks call the same functions, so the contract's order of checks, the gate and
/// the audit entries exist once.
public struct Operations: Sendable {
    public let database: Database
    public let gate: WriteGate
    public let metrics: Metrics
    public let blobs: BlobStore
    public let limits: Limits
    /// Requests carrying the same idempotency key take turns.
    public let turns: KeyTurns
    public let definitions = DefinitionCache()
    /// What each version's document says of its source and its XForm.
    public let versionFileCache = VersionFilesCache()
    /// Console sign-in attempts, per account and per address (across processes on PostgreSQL).
    public let throttle: SignInThrottle
    /// Argon2 computations at once (each holds 19 MiB).
    public let passwordChecks = PasswordChecks()
    /// Forms published as XLSForms and XForms, read into definitions.
    public let forms: FormSources
    /// Server time: the store's clock, so the gate and the operations never disagree.
    public var clock: any ServerClock { database.clock }

    public struct Limits: Sendable {
        /// A file is refused past this unless its question's `maxBytes` is lower.
        public var maxFileBytes: Int = 100 << 20
        /// A JSON request body (the HTTP door's own limit, known here for the routes that take more).
        public var maxJSONBodyBytes: Int = 1 << 20
        /// An XLSForm or XForm published as a version.
        public var maxFormBytes: Int = 10 << 20
        /// A version published with its files (`multipart/form-data`): the form and every file.
        public var maxFormUploadBytes: Int = 100 << 20

        /// A definition published as JSON keeps the JSON limit, through whichever door, though the
        /// publishing routes take bodies up to the form limit for XLSForms and XForms.
        public func checkJSONDefinition(bytes: Int) throws {
            guard bytes <= maxJSONBodyBytes else {
                throw ApiError(.payloadTooLarge, "The definition is too large: as JSON it is at most \(maxJSONBodyBytes) bytes (the limit); an XLSForm or XForm may be larger.")
            }
        }
        /// How long an unfinished resumable upload is kept.
        public var resumableLifetimeMillis: Int64 = 24 * 3_600_000
        /// Declared bytes of unfinished resumable uploads one collector may hold (1030 past it):
        /// partial files cannot fill the disk faster than they are finished or expire.
        public var maxUnfinishedBytesPerCaller: Int64 = 1 << 30
        /// Keyed requests one caller may have in flight (1030 past it).
        public var maxKeyedInFlight: Int = 100
        /// Webhook targets in private, loopback and link-local ranges are refused unless this is
        /// set (on-premise receivers, tests).
        public var webhooksAllowPrivate: Bool = false
        public init() {}
    }

    /// The gate counts its own 1001 refusals in `metrics`.
    public init(database: Database, metrics: Metrics = Metrics(), blobs: BlobStore, limits: Limits = Limits(),
                forms: FormSources = FormSources()) {
        self.database = database
        self.forms = forms
        self.gate = WriteGate(database: database) { metrics.add(.subscriptionRefusals) }
        self.metrics = metrics
        self.blobs = blobs
        self.limits = limits
        self.turns = KeyTurns(limit: limits.maxKeyedInFlight, shared: database.isShared ? database.keyedInFlight : nil)
        self.throttle = SignInThrottle(shared: database.isShared ? database.signInAttempts : nil)
    }

    public var submissions: Submissions { Submissions(operations: self) }
    public var openRosaForms: OpenRosaForms { OpenRosaForms(operations: self) }
    public var reviews: Reviews { Reviews(operations: self) }
    public var responseComments: ResponseComments { ResponseComments(operations: self) }
    public var uploads: Uploads { Uploads(operations: self) }
    public var surveys: Surveys { Surveys(operations: self) }
    public var surveyDrafts: SurveyDrafts { SurveyDrafts(operations: self) }
    public var tasks: FieldTasks { FieldTasks(operations: self) }
    public var users: Users { Users(operations: self) }
    public var organizations: Organizations { Organizations(operations: self) }
    public var exports: Exports { Exports(operations: self) }
    public var invitations: Invitations { Invitations(operations: self) }
    public var reviewQueue: ReviewQueue { ReviewQueue(operations: self) }
    public var consoleSessions: ConsoleSessions { ConsoleSessions(operations: self) }
    public var centralSessions: CentralSessions { CentralSessions(operations: self) }
    public var centralReviews: CentralReviews { CentralReviews(operations: self) }
    public var centralSubmissionFiles: CentralSubmissionFiles { CentralSubmissionFiles(operations: self) }
    public var webhooks: Webhooks { Webhooks(operations: self) }
}
