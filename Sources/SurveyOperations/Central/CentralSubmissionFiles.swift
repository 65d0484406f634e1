import SurveyDomain
import SurveyStorage

/// ODK Central's order for a submission with files: the XML first (`POST …/submissions`), then
/// each file (`POST …/submissions/{instanceId}/attachments/{name}`). surveyd stores a response
/// only with its files, so the XML whose files are still to come waits (`waiting_submissions`)
/// once the submission operation has checked everything else about it; each file becomes an
/// upload of the submission, bound to the question that names it; and the last one makes the
/// response — through the same submission operation, order of checks, gate and transaction,
/// which also removes the waiting XML.
public struct CentralSubmissionFiles: Sendable {
    let operations: Operations

    /// What `attach` did with a file.
    public enum Attached: Sendable {
        /// Kept (or kept already) as an upload; the submission still waits for `missing`.
        case waiting(missing: [String])
        /// Every file the XML names is here: the submission is to be made of `instance`.
        case complete(instance: [UInt8])
        /// The submission is stored already and has this very file.
        case stored(ResponseRecord)
    }

    /// The XML of `door`, refused by the submission operation only because files it names are
    /// not here yet, kept until they are. The same XML again is the same waiting submission;
    /// other XML under its instanceID, or from another user, is 1004. Gated.
    public func hold(orgId: String, door: CentralSubmissionDoor) throws -> WriteGate.Outcome<WaitingSubmissionRecord> {
        let ops = operations
        let sha = Digest.sha256Hex(door.xml)
        let waiting = try ops.database.read { db -> WaitingSubmissionRecord in
            let user = try ops.admit(try door.caller(in: db, operations: ops), to: Submissions.access, orgId: orgId, in: db).member()
            let arrival = try door.read(in: db, orgId: orgId, operations: ops)
            return WaitingSubmissionRecord(orgId: orgId, clientSubmissionId: arrival.instanceID, surveyId: arrival.version.surveyId,
                                           submitter: user.userId, instance: door.xml, instanceSHA256: sha, receivedAt: ops.clock.nowMillis())
        }
        let replay: @Sendable (ReadContext) throws -> WaitingSubmissionRecord? = { db in
            guard let w = try db.waitingSubmission(orgId: orgId, clientSubmissionId: waiting.clientSubmissionId) else { return nil }
            guard w.submitter == waiting.submitter, w.instanceSHA256 == sha else {
                throw ApiError(.idempotencyConflict, "This instanceID was already used for a different submission.")
            }
            return w
        }
        if let kept = try ops.database.read(replay) { return .replayed(kept) }
        return try ops.gate.write(orgId: orgId, actor: waiting.submitter, replay: replay) { tx in
            try tx.holdSubmission(waiting)
            return waiting
        }
    }

    /// The waiting submission `instanceId`, if the caller may see it: its submitter alone.
    public func waiting(orgId: String, instanceId: String, by user: UserRecord) throws -> WaitingSubmissionRecord? {
        try operations.database.read { db in
            try db.waitingSubmission(orgId: orgId, clientSubmissionId: instanceId).flatMap { $0.submitter == user.userId ? $0 : nil }
        }
    }

    /// The files a waiting submission names, each with whether it is here yet.
    public func files(of waiting: WaitingSubmissionRecord) throws -> [(name: String, exists: Bool)] {
        let ops = operations
        return try ops.database.read { db in
            let arrival = try OpenRosaArrival.read(waiting.instance, orgId: waiting.orgId, in: db, operations: ops)
            return try Self.names(arrival).map { name in
                (name, try db.upload(orgId: waiting.orgId, clientUploadId: OpenRosaForms.clientUploadId(instanceID: arrival.instanceID, fileName: name)) != nil)
            }
        }
    }

    /// One file of the submission `instanceId`, as its submitter sends it: kept as the upload
    /// the XML's answer names (Part 1's file rules: its question's types and size, the gate),
    /// the same bytes again being the same upload. A file the XML does not name is 404; a
    /// stored submission takes no other bytes for a file it has (1004).
    public func attach(orgId: String, instanceId: String, by caller: Caller, file: ReceivedFile) throws -> Attached {
        let ops = operations
        enum Found { case stored(ResponseRecord), waiting(WaitingSubmissionRecord, OpenRosaArrival, [StagedUpload]) }
        let found = try ops.database.read { db -> Found in
            let user = try ops.admit(caller, to: Submissions.access, orgId: orgId, in: db).member()
            if let r = try db.response(orgId: orgId, clientSubmissionId: instanceId), r.submitter == user.userId {
                let id = OpenRosaForms.clientUploadId(instanceID: instanceId, fileName: file.fileName)
                guard let u = try db.upload(orgId: orgId, clientUploadId: id) else { throw Self.notNamed(file.fileName) }
                guard u.sha256 == file.sha256 else {
                    throw ApiError(.idempotencyConflict, "The submission is stored with another \(file.fileName): its files are kept as they were first sent.")
                }
                return .stored(r)
            }
            guard let w = try db.waitingSubmission(orgId: orgId, clientSubmissionId: instanceId), w.submitter == user.userId else {
                throw ApiError.notFound()
            }
            let arrival = try OpenRosaArrival.read(w.instance, orgId: orgId, in: db, operations: ops)
            guard Self.names(arrival).contains(file.fileName) else { throw Self.notNamed(file.fileName) }
            return .waiting(w, arrival, try arrival.stage([file], submitter: user.userId, in: db, operations: ops))
        }
        switch found {
        case .stored(let r): return .stored(r)
        case .waiting(let w, let arrival, let staged):
            for s in staged { try ops.uploads.keep(s) }
            let missing = try ops.database.read { db in
                try Self.names(arrival).filter { try db.upload(orgId: orgId, clientUploadId: OpenRosaForms.clientUploadId(instanceID: instanceId, fileName: $0)) == nil }
            }
            return missing.isEmpty ? .complete(instance: w.instance) : .waiting(missing: missing)
        }
    }

    static func names(_ arrival: OpenRosaArrival) -> [String] {
        var seen = Set<String>()
        return arrival.files.map(\.fileName).filter { seen.insert($0).inserted }
    }

    static func notNamed(_ name: String) -> ApiError {
        ApiError(.notFound, "The submission names no file \(name): only the files its XML names are taken.")
    }
}
