import SurveyDomain

/// The one way into a survey-domain write. In a single writer transaction it:
/// 0. while the subscription has expired, answers the refusal (or a replay) from a reader,
///    without taking the write lock (except a write decided by reads on PostgreSQL, `prepare`,
///    whose reads are already in the write's transaction),
/// 1. looks for a replay (`replay` reads the committed state; a non-nil answer is returned as is,
///    even while the subscription has expired, and nothing is written),
/// 2. checks the organization's subscription against server time (1001),
/// 3. runs the write with a `GatedTransaction`, which requires an audit entry,
/// and the writer commits it all together. Authentication, authorization and validation happen
/// before, in the service, on reads — refusals there need no transaction.
public struct WriteGate: Sendable {
    let database: Database
    /// Called once for every 1001 the gate answers (the refusal metric): the gate owns the rule,
    /// its error and its count, so no door has to remember either.
    let onRefusal: @Sendable () -> Void
    public init(database: Database, onRefusal: @escaping @Sendable () -> Void = {}) {
        self.database = database
        self.onRefusal = onRefusal
    }

    /// For a door that must refuse before it reads a body (a tus chunk): the gate's own 1001 when
    /// `org` — as the caller just read it — has expired. The write itself still goes through
    /// `write`, which decides again inside its transaction.
    public func refuseIfExpired(_ org: OrgRecord) throws {
        guard isExpired(org) else { return }
        onRefusal()
        throw Self.expired(org.expiresAt)
    }

    /// The gate's rule, asked without a write (the console's banner and disabled buttons).
    public func isExpired(_ org: OrgRecord) -> Bool { database.clock.nowMillis() >= org.expiresAt }

    /// When step 1 runs inside the transaction.
    public enum ReplayCheck: Sendable {
        /// Before the write, always.
        case beforeWrite
        /// Only when it matters: when the write's own UNIQUE index reports the key as taken (its
        /// work is then rolled back and the replay answered), and before a 1001 refusal. For a
        /// write whose key is a UNIQUE index (a response's `(org_id, client_submission_id)`): the
        /// insert finds a duplicate anyway, so the writer, which every submission queues behind,
        /// does not look twice (the look-up was 11 % of its CPU). The caller has already looked
        /// in its read snapshot; this catches only duplicates committed since.
        case onConflict
    }

    public enum Outcome<T: Sendable>: Sendable {
        case written(T)
        case replayed(T)
    }

    /// `turn`: a key whose requests take turns across processes (an idempotency key's scope):
    /// on PostgreSQL a second transaction with it waits here, before its replay check, until the
    /// first has committed — and then finds its answer. One process already orders them (`KeyTurns`).
    public func write<T: Sendable>(
        orgId: String, actor: String,
        replay: @escaping @Sendable (ReadContext) throws -> T? = { _ in nil }, replayCheck: ReplayCheck = .beforeWrite,
        turn: String? = nil,
        _ body: @escaping @Sendable (GatedTransaction) throws -> T
    ) throws -> Outcome<T> {
        if let answer = try answerWhileExpired(orgId: orgId, replay: replay) { return answer }
        return try database.writer.submit(Self.job(orgId: orgId, actor: actor, replay: replay, replayCheck: replayCheck, turn: turn, onRefusal: onRefusal, clock: database.clock, body))
    }

    /// `write` for a caller that must not wait (an HTTP polling thread): `then` gets the outcome
    /// after the group's COMMIT, on the writer thread — it must only hand it on — or at once, on
    /// this thread, when it is decided without the writer (expired, shutting down). `organization`
    /// is the organization as the caller's own read snapshot found it, which spares a read here.
    public func writeAsync<T: Sendable>(
        orgId: String, actor: String, organization: OrgRecord? = nil,
        replay: @escaping @Sendable (ReadContext) throws -> T? = { _ in nil }, replayCheck: ReplayCheck = .beforeWrite,
        turn: String? = nil,
        _ body: @escaping @Sendable (GatedTransaction) throws -> T,
        then: @escaping @Sendable (Result<Outcome<T>, any Error>) -> Void
    ) {
        do {
            if let answer = try answerWhileExpired(orgId: orgId, known: organization, replay: replay) { return then(.success(answer)) }
        } catch {
            return then(.failure(error))
        }
        database.writer.submitAsync(Self.job(orgId: orgId, actor: actor, replay: replay, replayCheck: replayCheck, turn: turn, onRefusal: onRefusal, clock: database.clock, body), then: then)
    }

    /// What a write decided by reads found: an answer that needs no write (a replay of a stored
    /// result), or the write itself, with what `writeAsync` takes besides.
    public enum Prepared<T: Sendable>: Sendable {
        case answered(T)
        case write(PreparedWrite<T>)
    }

    public struct PreparedWrite<T: Sendable>: Sendable {
        let actor: String
        let organization: OrgRecord?
        let replay: @Sendable (ReadContext) throws -> T?
        let replayCheck: ReplayCheck
        let body: @Sendable (GatedTransaction) throws -> T
        /// `organization`: as `prepare` read it (SQLite's expiry pre-check then reads nothing).
        public init(actor: String, organization: OrgRecord?, replay: @escaping @Sendable (ReadContext) throws -> T?,
                    replayCheck: ReplayCheck, _ body: @escaping @Sendable (GatedTransaction) throws -> T) {
            self.actor = actor
            self.organization = organization
            self.replay = replay
            self.replayCheck = replayCheck
            self.body = body
        }
    }

    /// A write that reads first what decides it (who is calling, what is stored under its key):
    /// `prepare` reads, checks, and returns the answer or the write. On SQLite it reads a
    /// reader's snapshot and the write is queued after, so the one writer never waits on reads
    /// or checks. On PostgreSQL both run in one transaction on a write connection, the
    /// subscription's locked read sent with `prepare`'s first statement: one transaction and two
    /// round trips where a read snapshot and a write took two transactions and three. The order
    /// of checks is `prepare`'s, then the gate's, on both; a refusal writes nothing on both.
    ///
    /// `opening`: the reads `prepare` will make first, announced (`ReadContext.prefetch…`, no
    /// writes) so that PostgreSQL sends them with the transaction's BEGIN and the gate's locked
    /// read — under load right after the COMMIT of the write before it on the same connection,
    /// in that write's last round trip. Nothing on SQLite, where `prepare` reads a snapshot.
    public func writeAsync<T: Sendable>(
        orgId: String, opening: @escaping @Sendable (ReadContext) -> Void = { _ in },
        prepare: @escaping @Sendable (ReadContext) throws -> Prepared<T>,
        then: @escaping @Sendable (Result<Outcome<T>, any Error>) -> Void
    ) {
        guard database.dialect == .postgres else {
            let prepared: Prepared<T>
            do { prepared = try database.read(prepare) } catch { return then(.failure(error)) }
            switch prepared {
            case .answered(let answer): return then(.success(.replayed(answer)))
            case .write(let w):
                return writeAsync(orgId: orgId, actor: w.actor, organization: w.organization, replay: w.replay,
                                  replayCheck: w.replayCheck, w.body, then: then)
            }
        }
        let onRefusal = self.onRefusal, clock = database.clock
        database.writer.submitAsync(opening: { conn in
            conn.prefetchSubscriptionEnd(orgId: orgId)
            opening(ReadContext(conn))
        }, { conn, undo -> Outcome<T> in
            switch try prepare(ReadContext(conn)) {
            case .answered(let answer): return .replayed(answer)
            case .write(let w):
                return try Self.job(orgId: orgId, actor: w.actor, replay: w.replay, replayCheck: w.replayCheck, turn: nil,
                                    onRefusal: onRefusal, clock: clock, w.body)(conn, undo)
            }
        }, then: then)
    }

    /// While expired, a refusal needs no write lock: answer it (or a replay) from a reader. The
    /// check inside the transaction (`job`) stays the one that decides. `known`: the organization
    /// as the caller already read it (then only an expired one costs a read here).
    private func answerWhileExpired<T>(orgId: String, known: OrgRecord? = nil, replay: (ReadContext) throws -> T?) throws -> Outcome<T>? {
        func replayOrRefuse(_ org: OrgRecord, _ db: ReadContext) throws -> Outcome<T> {
            if let answer = try replay(db) { return .replayed(answer) }
            onRefusal()
            throw Self.expired(org.expiresAt)
        }
        if let org = known, org.orgId == orgId {
            guard database.clock.nowMillis() >= org.expiresAt else { return nil }
            return try database.read { try replayOrRefuse(org, $0) }
        }
        return try database.read { db -> Outcome<T>? in
            guard let org = try db.org(orgId), database.clock.nowMillis() >= org.expiresAt else { return nil }
            return try replayOrRefuse(org, db)
        }
    }

    /// The transaction every gated write runs on the writer: replay, subscription, write, audit.
    private static func job<T>(orgId: String, actor: String, replay: @escaping (ReadContext) throws -> T?, replayCheck: ReplayCheck, turn: String?,
                               onRefusal: @escaping @Sendable () -> Void, clock: any ServerClock, _ body: @escaping (GatedTransaction) throws -> T) -> (any SQLConnection, UndoLog) throws -> Outcome<T> {
        { conn, undo in
            if let turn { try conn.takeTurn(turn) }
            if replayCheck == .beforeWrite, let answer = try replay(ReadContext(conn)) { return .replayed(answer) }
            let end = try conn.subscriptionEnd(orgId: orgId)
            let now = clock.nowMillis()  // after the lock: a write that waited for a renewal is judged by its end
            guard let expiresAt = end else { throw ApiError.notFound() }
            guard now < expiresAt else {
                if replayCheck == .onConflict, let answer = try replay(ReadContext(conn)) { return .replayed(answer) }
                onRefusal()
                throw Self.expired(expiresAt)
            }
            let context = WriteContext(conn, orgId: orgId, actor: actor, now: now, undo: undo)
            do {
                let result = try body(GatedTransaction(context))
                try context.requireAudit()
                // Statements held back (`enqueue`) are answered here, inside this catch: a taken
                // key is reported by the insert that finds it, whatever statement carried it. On
                // PostgreSQL the job's COMMIT goes with them; after an error it is skipped and the
                // transaction stays open for the replay below.
                try conn.finishJob()
                return .written(result)
            } catch where replayCheck == .onConflict && isUniqueViolation(error) {
                // Taken since the caller's snapshot (on PostgreSQL the insert waited for the
                // other transaction to commit): undo whatever the write did, then answer the
                // stored one.
                try undoJob(conn, undo)
                if let answer = try replay(ReadContext(conn)) { return .replayed(answer) }
                throw error
            }
        }
    }

    /// The one 1001: every refusal of an expired subscription is built here.
    static func expired(_ expiresAt: Int64) -> ApiError {
        ApiError(.subscriptionExpired,
                 "The organization's subscription expired at \(Timestamp.format(expiresAt)). Nothing was written; keep the request and retry it unchanged after renewal.",
                 extra: ["expiresAt": .string(Timestamp.format(expiresAt))])
    }
}

/// A transaction of the survey domain. It lives in this file so that its `fileprivate` init is
/// reachable from `WriteGate.write` alone, which makes one only after checking the subscription
/// inside the same transaction: every repository write method hangs off this type, so a
/// survey-domain write cannot skip the gate.
public struct GatedTransaction {
    let context: WriteContext
    fileprivate init(_ context: WriteContext) { self.context = context }
    public var now: Int64 { context.now }
    public var orgId: String { context.orgId }
    public var read: ReadContext { ReadContext(context.conn) }

    public func audit(action: String, targetType: String, targetId: String, revision: Int64? = nil, detail: String? = nil) throws {
        try context.audit(action: action, targetType: targetType, targetId: targetId, revision: revision, detail: detail)
    }
}
