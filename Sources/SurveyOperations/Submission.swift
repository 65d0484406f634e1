import SurveyDomain

/// A collector's submission as its door decoded it: the envelope and the answers, the same value
/// whichever door it came through (the JSON API today; OpenRosa maps its instance onto it).
public struct Submission: Sendable {
    public let clientSubmissionId: String
    public let surveyVersionId: String
    public let contentHash: String
    public let answers: JSONValue
    public let fieldTaskId: String?
    /// As sent: checked with the rest of the request (step 4), so a bad one is reported there.
    public let capturedAt: JSONValue?
    /// What it says it did to an entity (`EntityChange`), as sent; checked in step 4.
    public let entity: JSONValue?
    /// What it says it did to the entities of the form's groups and repeats (Entities 2025.1):
    /// `[{container, index?, id, create?, update?, …}]`, as sent; checked in step 4.
    public let entities: JSONValue?
    /// Every member of the envelope (`answers` aside, or left in and skipped): what the canonical
    /// digest covers with the answers.
    let envelope: [String: JSONValue]
    /// The SHA-256 of the bytes as sent, where the door has such bytes (a retry of the same
    /// bytes is then recognised without comparing content); empty otherwise.
    let bytesSHA256: [UInt8]
    /// What the door found wrong with answers while reading its own format, which the version's
    /// rules do not cover (the OpenRosa door: an integer no ODK app can hold): refused with them
    /// (step 4), after a replay is recognised.
    let doorProblems: [FieldError]
    /// The files sent with it, verified and not stored yet: committed in its transaction.
    public internal(set) var stagedUploads: [StagedUpload] = []
    /// The names its sender knows its files by, by upload id (an ODK app's file names).
    var fileNames: [String: String] = [:]
    /// Whether its XML may be waiting for its files (`CentralSubmissionFiles`): stored, it is removed.
    var releasesWaiting = false

    /// The same submission with the files sent with it.
    public func with(_ staged: [StagedUpload]) -> Submission {
        var s = self
        s.stagedUploads = staged
        return s
    }

    /// A submission from a door without JSON bytes of its own.
    public init(clientSubmissionId: String, surveyVersionId: String, contentHash: String, answers: JSONValue,
                fieldTaskId: String? = nil, capturedAt: Int64? = nil, entity: JSONValue? = nil, entities: [JSONValue] = [],
                doorProblems: [FieldError] = []) throws(ApiError) {
        var envelope: [String: JSONValue] = ["clientSubmissionId": .string(clientSubmissionId), "surveyVersionId": .string(surveyVersionId),
                                             "contentHash": .string(contentHash)]
        if let fieldTaskId { envelope["fieldTaskId"] = .string(fieldTaskId) }
        if let capturedAt { envelope["capturedAt"] = .string(Timestamp.format(capturedAt)) }
        if let entity { envelope["entity"] = entity }
        if !entities.isEmpty { envelope["entities"] = .array(entities) }
        try self.init(envelope: envelope, answers: answers, bytesSHA256: [], doorProblems: doorProblems)
    }

    /// The JSON door's body: `{clientSubmissionId, surveyVersionId, contentHash, answers, fieldTaskId?, capturedAt?, entity?, entities?}`.
    public init(json body: JSONBody, bytes: [UInt8]) throws(ApiError) {
        guard let answers = body.fields["answers"] else {
            _ = try Self.identifier(body)  // an unusable id is reported first, as it always was
            throw ApiError.malformed("`answers` is required.")
        }
        // The envelope keeps `answers`: the digest encodes the canonical answers in its place.
        try self.init(envelope: body.fields, answers: answers, bytesSHA256: Digest.sha256(bytes), doorProblems: [])
    }

    private init(envelope: [String: JSONValue], answers: JSONValue, bytesSHA256: [UInt8], doorProblems: [FieldError]) throws(ApiError) {
        let body = JSONBody(fields: envelope)
        clientSubmissionId = try Self.identifier(body)
        fieldTaskId = try body.optionalString("fieldTaskId")
        surveyVersionId = try body.string("surveyVersionId")
        contentHash = try body.string("contentHash")
        capturedAt = envelope["capturedAt"].flatMap { $0.isNull ? nil : $0 }
        entity = envelope["entity"].flatMap { $0.isNull ? nil : $0 }
        entities = envelope["entities"].flatMap { $0.isNull ? nil : $0 }
        self.answers = answers
        self.envelope = envelope
        self.bytesSHA256 = bytesSHA256
        self.doorProblems = doorProblems
    }

    private static func identifier(_ body: JSONBody) throws(ApiError) -> String {
        let id = try body.string("clientSubmissionId")
        guard ClientIdentifier.isValid(id) else {
            throw ApiError(.invalidIdentifier, "clientSubmissionId must be 8–128 characters of A-Z a-z 0-9 _ - : .")
        }
        return id
    }

    /// `capturedAt` read (step 4).
    func capturedAtMillis() throws(ApiError) -> Int64? {
        guard let capturedAt else { return nil }
        return try JSONBody(fields: ["capturedAt": capturedAt]).optionalTimestamp("capturedAt")
    }

    /// The canonical digest of the whole submission, given its answers' canonical encoding:
    /// equal for every encoding of the same content, and for the same content from any door.
    func digest(canonicalAnswers: [UInt8]) -> String {
        "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(envelope, adding: "answers", encoded: canonicalAnswers))
    }
}
