import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Responses, keyed by `clientSubmissionId`: accepted exactly once however often retried.
struct ResponseService {
    let services: Services

    func register(into router: inout Router) {
        // Inline: everything before the write is reads; the write itself is queued (`later`).
        router.add("POST", "/v1/orgs/{orgId}/responses", runs: .inline, submit)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses", .member(anyOf: []), list)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}", .member(anyOf: []), get)
    }

    static func receipt(_ r: ResponseRecord) -> JSONValue {
        receipt(r, surveyVersionId: r.surveyVersionId, reviewState: r.reviewState, revision: r.revision)
    }

    /// The receipt exactly as the acceptance answered it, whatever happened since: revision 1,
    /// the version it was accepted with, and the first review state (`submitted` when the survey
    /// is reviewed, which every later state implies; `none` otherwise). For replays.
    static func acceptedReceipt(_ r: ResponseRecord) -> JSONValue {
        receipt(r, surveyVersionId: r.acceptedSurveyVersionId ?? r.surveyVersionId,
                reviewState: r.reviewState == ReviewState.none.rawValue ? ReviewState.none.rawValue : ReviewState.submitted.rawValue,
                revision: 1)
    }

    private static func receipt(_ r: ResponseRecord, surveyVersionId: String, reviewState: String, revision: Int64) -> JSONValue {
        var o: [String: JSONValue] = [
            "responseId": .string(r.responseId), "clientSubmissionId": .string(r.clientSubmissionId),
            "surveyVersionId": .string(surveyVersionId), "status": "accepted", "reviewState": .string(reviewState),
            "revision": .number(Double(revision)), "receivedAt": .string(Timestamp.format(r.receivedAt)),
        ]
        if let t = r.fieldTaskId { o["fieldTaskId"] = .string(t) }
        return .object(o)
    }

    static func responseJSON(_ r: ResponseRecord) throws -> JSONValue {
        var o = receipt(r).objectValue!
        o["surveyId"] = .string(r.surveyId)
        o["submittedBy"] = .string(r.submitter)
        o["answers"] = try JSONParser.parse(Array(r.answers.utf8))
        if let c = r.capturedAt { o["capturedAt"] = .string(Timestamp.format(c)) }
        return .object(o)
    }

    /// The canonical digest of a request body: equal for re-encodings of the same content.
    static func digest(_ body: JSONValue) -> String { "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(body)) }

    /// Step 3, the replay: the same submitter and the same request → the stored receipt; anything
    /// else under that id → 1004, revealing nothing of what is stored.
    static func replay(of stored: ResponseRecord, submitter: String, bodySHA256: [UInt8], digest: () -> String) throws -> ResponseRecord {
        guard stored.submitter == submitter, stored.requestSHA256 == bodySHA256 || stored.requestDigest == digest() else {
            throw ApiError(.idempotencyConflict, "This clientSubmissionId was already used for a different submission.")
        }
        return stored
    }

    /// What the snapshot read of a submission found.
    private enum Seen {
        /// A retry of the very bytes of a stored submission: answered without parsing the body.
        case sameBytes(ResponseRecord)
        case parsed(UserRecord, JSONBody, TaskRecord?, ResponseRecord?, OrgRecord?)
    }

    /// The outcome of looking for a same-bytes replay.
    private enum SameBytes {
        case replay(ResponseRecord)
        /// The id the scan found and what is stored under it, for the full path to reuse.
        case lookedUp(String, ResponseRecord?)
        case notFound
    }

    /// Most replays are a phone resending the bytes it sent before. Those are recognised before
    /// the body is parsed (a parse was ~10 % of a replay's CPU): the id is found by a scan, and
    /// the stored row's SHA-256 of its request decides. A match means these bytes are the body
    /// that was validated and accepted under this very id, so a parse could only agree. A row
    /// citing a field task is left to the full path, which checks the task before the replay.
    private static func sameBytesReplay(_ body: [UInt8], orgId: String, submitter: String, in db: ReadContext) throws -> SameBytes {
        guard let id = ClientIdentifier.scan(body, key: "clientSubmissionId") else { return .notFound }
        let stored = try db.response(orgId: orgId, clientSubmissionId: id)
        if let stored, stored.submitter == submitter, stored.fieldTaskId == nil,
           !stored.requestSHA256.isEmpty, stored.requestSHA256 == Digest.sha256(body) {
            return .replay(stored)
        }
        return .lookedUp(id, stored)
    }

    func submit(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        // Steps 1–3 read one snapshot: who is calling, the task they cite, and what is already
        // stored under this clientSubmissionId (one reader checkout, one BEGIN, one cache refill).
        let seen = try services.database.read { db -> Seen in
            let user = try services.member(try services.authenticate(request.head, in: db), of: orgId, withAnyOf: .collector)
            // clientSubmissionId is this write's key; an Idempotency-Key is checked for format only.
            _ = try KeyedWrites.key(request)
            let sameBytes = try Self.sameBytesReplay(request.body, orgId: orgId, submitter: user.userId, in: db)
            if case .replay(let stored) = sameBytes { return .sameBytes(stored) }
            let body = try JSONBody(request)
            let clientSubmissionId = try body.string("clientSubmissionId")
            guard ClientIdentifier.isValid(clientSubmissionId) else {
                throw ApiError(.invalidIdentifier, "clientSubmissionId must be 8–128 characters of A-Z a-z 0-9 _ - : .")
            }
            // 2. a cited field task must be the caller's own; any other is the 404 of nothing.
            let task: TaskRecord? = try body.optionalString("fieldTaskId").map { id in
                guard let t = try db.task(orgId: orgId, taskId: id), t.assigneeUserId == user.userId else { throw ApiError.notFound() }
                return t
            }
            let stored: ResponseRecord?
            if case .lookedUp(clientSubmissionId, let found) = sameBytes { stored = found } else {
                stored = try db.response(orgId: orgId, clientSubmissionId: clientSubmissionId)
            }
            // The organization too: the gate's expiry pre-check below then needs no read of its own.
            return .parsed(user, body, task, stored, try db.org(orgId))
        }
        let user: UserRecord, body: JSONBody, task: TaskRecord?, stored: ResponseRecord?, organization: OrgRecord?
        switch seen {
        case .sameBytes(let replayed): return Self.replayed(replayed, metrics: services.metrics)
        case .parsed(let u, let b, let t, let s, let o): (user, body, task, stored, organization) = (u, b, t, s, o)
        }
        let clientSubmissionId = try body.string("clientSubmissionId")
        let surveyVersionId = try body.string("surveyVersionId")
        let contentHash = try body.string("contentHash")
        guard let answers = body.fields["answers"] else { throw ApiError.malformed("`answers` is required.") }
        let fieldTaskId = try body.optionalString("fieldTaskId")
        let bodySHA256 = Digest.sha256(request.body)
        // The canonical digest costs a re-encoding and a hash: a replay sent with the same bytes
        // never needs it, so it is computed only when the bytes differ or the request is new.
        let bodyValue = body.value

        // 3. replay — answered even while the subscription has expired.
        if let stored {
            do {
                return Self.replayed(try Self.replay(of: stored, submitter: user.userId, bodySHA256: bodySHA256, digest: { Self.digest(bodyValue) }),
                                     metrics: services.metrics)
            } catch let e as ApiError where e.code == .idempotencyConflict {
                services.metrics.add(.idempotencyConflicts)
                throw e
            }
        }

        // 4. validate, reported as itself and never as 1001.
        guard let published = try services.definitions.published(orgId: orgId, surveyVersionId: surveyVersionId, database: services.database) else {
            throw ApiError.notFound()
        }
        let version = published.version, survey = published.survey
        guard contentHash == version.contentHash else {
            throw ApiError(.surveyVersionMismatch, "contentHash does not match survey version \(surveyVersionId).")
        }
        let capturedAt: Int64?
        do { capturedAt = try body.optionalTimestamp("capturedAt") } catch { services.metrics.add(.validationRefusals); throw error }
        let check = published.definition.validate(answers: answers)
        guard check.errors.isEmpty else {
            services.metrics.add(.validationRefusals)
            throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors)
        }
        try checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: version.surveyVersionId)
        if let task {
            guard task.surveyId == survey.surveyId else {
                throw ApiError(.validationFailed, "The field task is for another survey.",
                               errors: [FieldError(path: "fieldTaskId", message: "task is for survey \(task.surveyId)")])
            }
            guard task.state == "open" else { throw ApiError(.taskAlreadyCompleted, "The field task \(task.taskId) is already completed.") }
        }
        // A survey without review is complete on acceptance, and so is its task.
        let completesTask = fieldTaskId != nil && !survey.reviewRequired

        // 5–6. the gate: replay re-checked, subscription, insert + audit, one transaction.
        // The stored answers and the body's digest share one canonical encoding of the answers.
        let canonicalAnswers = CanonicalJSON.encode(answers)
        let digest = "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(body.fields, adding: "answers", encoded: canonicalAnswers))
        let now = services.clock.nowMillis()
        let record = ResponseRecord(
            responseId: Ids.make("rsp", nowMillis: now), orgId: orgId, clientSubmissionId: clientSubmissionId,
            submitter: user.userId, surveyId: survey.surveyId, surveyVersionId: version.surveyVersionId, requestDigest: digest,
            requestSHA256: bodySHA256, answers: String(decoding: canonicalAnswers, as: UTF8.self), fieldTaskId: fieldTaskId, capturedAt: capturedAt,
            receivedAt: now, reviewState: survey.reviewRequired ? ReviewState.submitted.rawValue : ReviewState.none.rawValue,
            revision: 1)
        let submitter = user.userId
        let metrics = services.metrics
        // The write is queued and this thread goes on serving other connections; the writer wakes
        // the request after the group's COMMIT and the answer is built back here.
        let answer = DeferredResponse()
        // The insert's UNIQUE (org_id, client_submission_id) finds a duplicate committed since the
        // snapshot above; only then is the stored one read (`.onConflict`).
        services.gate.writeAsync(orgId: orgId, actor: submitter, organization: organization, replay: { db in
            try db.response(orgId: orgId, clientSubmissionId: clientSubmissionId).map {
                try Self.replay(of: $0, submitter: submitter, bodySHA256: bodySHA256, digest: { digest })
            }
        }, replayCheck: .onConflict, { tx in
            let stored = ResponseRecord(
                responseId: record.responseId, orgId: orgId, clientSubmissionId: clientSubmissionId, submitter: submitter,
                surveyId: record.surveyId, surveyVersionId: record.surveyVersionId, requestDigest: digest, requestSHA256: bodySHA256,
                answers: record.answers, fieldTaskId: fieldTaskId, capturedAt: capturedAt, receivedAt: tx.now,
                reviewState: record.reviewState, revision: 1)
            try tx.insertResponse(stored)
            if completesTask, let taskId = fieldTaskId {
                try tx.completeTask(taskId: taskId, responseId: stored.responseId, completedBy: submitter)
            }
            return stored
        }, then: { result in
            answer.complete {
                switch result {
                case .success(.replayed(let stored)):
                    return Self.replayed(stored, metrics: metrics)
                case .success(.written(let stored)):
                    metrics.add(.responsesAccepted)
                    if let c = stored.capturedAt { metrics.syncAge(seconds: Double(stored.receivedAt - c) / 1000) }
                    return HTTPResponse.created("/v1/orgs/\(orgId)/responses/\(stored.responseId)", Self.receipt(stored))
                        .logging(["responseId": stored.responseId])
                case .failure(let e):
                    if let e = e as? ApiError, e.code == .idempotencyConflict { metrics.add(.idempotencyConflicts) }
                    throw e
                }
            }
        })
        return .later(answer)
    }

    /// Every file answer cites a completed upload of this organization, version and question
    /// (uploads are never deleted, so a check before the transaction stays true).
    func checkAttachments(_ files: [FileAnswer], orgId: String, surveyVersionId: String) throws {
        for file in files {
            let upload = try services.database.read { try $0.upload(orgId: orgId, clientUploadId: file.clientUploadId) }
            guard let upload, upload.surveyVersionId == surveyVersionId, upload.questionId == file.questionId else {
                throw ApiError(.attachmentNotUploaded, "No completed upload \(file.clientUploadId) for question \(file.questionId) of this version.",
                               errors: [FieldError(path: "answers.\(file.questionId)", message: "not a completed upload for this question")])
            }
        }
    }

    private static func replayed(_ stored: ResponseRecord, metrics: Metrics) -> HTTPResponse {
        metrics.add(.responsesReplayed)
        return HTTPResponse.replayed(.json(200, Self.acceptedReceipt(stored), headers: [
            ("Location", "/v1/orgs/\(stored.orgId)/responses/\(stored.responseId)"),
        ])).logging(["responseId": stored.responseId])
    }

    /// The response if the caller may know of it: reviewers and admins see all of the
    /// organization's, a collector their own; anything else is the 404 of nothing.
    static func visibleResponse(_ services: Services, _ user: UserRecord, orgId: String, responseId: String) throws -> ResponseRecord {
        guard let r = try services.database.read({ try $0.response(orgId: orgId, responseId: responseId) }),
              user.has(.reviewer) || user.has(.admin) || r.submitter == user.userId else { throw ApiError.notFound() }
        return r
    }

    func get(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return .json(200, try Self.responseJSON(try Self.visibleResponse(services, user, orgId: orgId, responseId: request.parameter("responseId"))))
    }

    func list(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        if let csid = request.query["clientSubmissionId"] {
            // Reconciling after an ambiguous answer: the caller's own submission only.
            guard ClientIdentifier.isValid(csid) else { throw ApiError(.invalidIdentifier, "clientSubmissionId is not a valid client id.") }
            guard let r = try services.database.read({ try $0.response(orgId: orgId, clientSubmissionId: csid) }),
                  r.submitter == user.userId else { throw ApiError.notFound() }
            return .json(200, try Self.responseJSON(r))
        }
        let page = try Page(request)
        var state: String?
        if let s = request.query["reviewState"] {
            guard ReviewState(rawValue: s) != nil else {
                throw ApiError(.validationFailed, "Unknown reviewState.", errors: [FieldError(path: "reviewState", message: "one of \(ReviewState.allCases.map(\.rawValue).joined(separator: ", "))")])
            }
            state = s
        }
        let onlyOwn = !(user.has(.reviewer) || user.has(.admin))
        let rows = try services.database.read {
            try $0.responses(orgId: orgId, submitter: onlyOwn ? user.userId : nil, reviewState: state, after: page.after, limit: page.limit)
        }
        return .json(200, page.render(rows, id: \.responseId, item: { (try? Self.responseJSON($0)) ?? .null }))
    }
}

extension HTTPResponse {
    func logging(_ fields: [String: String]) -> HTTPResponse {
        var r = self
        r.logFields.merge(fields) { _, new in new }
        return r
    }
}
