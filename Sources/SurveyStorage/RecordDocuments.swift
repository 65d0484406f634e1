import SurveyDomain

/// The JSON documents of the records, as the API answers them. They live beside the records so
/// that a webhook event, recorded inside the write's transaction, carries exactly the document
/// the API would have answered at that moment.
extension ResponseRecord {
    /// The receipt of the response as it stands.
    public var receipt: JSONValue { .object(receiptMembers) }

    /// The receipt exactly as the acceptance answered it, whatever happened since: revision 1,
    /// the version it was accepted with, and the first review state (`submitted` when the survey
    /// is reviewed, which every later state implies; `none` otherwise). For replays.
    public var acceptedReceipt: JSONValue {
        .object(receiptMembers(surveyVersionId: acceptedSurveyVersionId ?? surveyVersionId,
                               reviewState: firstReviewState ?? (reviewState == .none ? .none : .submitted),
                               revision: 1))
    }

    private var receiptMembers: [String: JSONValue] {
        receiptMembers(surveyVersionId: surveyVersionId, reviewState: reviewState, revision: revision)
    }

    private func receiptMembers(surveyVersionId: String, reviewState: ReviewState, revision: Int64) -> [String: JSONValue] {
        var o: [String: JSONValue] = [
            "responseId": .string(responseId), "clientSubmissionId": .string(clientSubmissionId),
            "surveyVersionId": .string(surveyVersionId), "status": "accepted", "reviewState": .string(reviewState.rawValue),
            "revision": .number(Double(revision)), "receivedAt": .string(Timestamp.format(receivedAt)),
        ]
        if let t = fieldTaskId { o["fieldTaskId"] = .string(t) }
        return o
    }

    /// The whole response: the receipt, who sent it and its answers.
    public func document() throws -> JSONValue {
        var o = documentMembers
        o["answers"] = try JSONParser.parse(Array(answers.utf8))
        return .object(o)
    }

    /// `document()` as canonical bytes, with `extra` members beside (a review's transition). The
    /// answers are stored canonical, so they go in as they are, never parsed: this is built on
    /// the writer, for every event a webhook listens to.
    public func encodedDocument(adding extra: [String: JSONValue] = [:]) -> [UInt8] {
        CanonicalJSON.encode(documentMembers.merging(extra) { a, _ in a }, adding: "answers", encoded: Array(answers.utf8))
    }

    private var documentMembers: [String: JSONValue] {
        var o = receiptMembers
        o["surveyId"] = .string(surveyId)
        o["submittedBy"] = .string(submitter)
        if let c = capturedAt { o["capturedAt"] = .string(Timestamp.format(c)) }
        return o
    }
}

extension UploadRecord {
    public var document: JSONValue { .object(documentMembers) }

    /// `document`'s members, for a document that adds to them (a webhook's event).
    public var documentMembers: [String: JSONValue] {
        ["clientUploadId": .string(clientUploadId), "surveyVersionId": .string(surveyVersionId), "questionId": .string(questionId),
         "contentType": .string(contentType), "size": .number(Double(size)), "sha256": .string(sha256),
         "receivedAt": .string(Timestamp.format(receivedAt))]
    }
}

extension TaskRecord {
    public var document: JSONValue {
        var o: [String: JSONValue] = [
            "taskId": .string(taskId), "title": .string(title), "surveyId": .string(surveyId),
            "assigneeUserId": .string(assigneeUserId), "state": .string(state.rawValue), "createdAt": .string(Timestamp.format(createdAt)),
        ]
        if let d = dueAt { o["dueAt"] = .string(Timestamp.format(d)) }
        if let n = notes { o["notes"] = .string(n) }
        if let c = completedAt { o["completedAt"] = .string(Timestamp.format(c)) }
        if let b = completedBy { o["completedBy"] = .string(b) }
        if let r = responseId { o["responseId"] = .string(r) }
        if let list = entityList, let id = entityId {
            o["entityList"] = .string(list)
            o["entityId"] = .string(id)
        }
        return .object(o)
    }
}
