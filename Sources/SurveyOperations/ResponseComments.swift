import SurveyDomain
import SurveyStorage

/// Comments on a response: entries of its history (`Reviews.history`) that move nothing. A
/// comment is a gated, audited write by a reviewer or admin; its readers are those who may see
/// the response, and they read it with the review steps' own comments, oldest first.
public struct ResponseComments: Sendable {
    /// One comment: its text, who made it and when.
    public struct Comment: Sendable, Equatable {
        public let text: String
        public let actor: String
        public let at: Int64
    }

    let operations: Operations

    /// The audit action a comment is kept under.
    public static let action = "response.comment"
    static let longest = 10_000

    /// Order: the response visible (404), the caller a reviewer or admin (1006), the key's replay,
    /// the body (1031 / 1002 at `body`), then the gate (1001).
    public func add(orgId: String, responseId: String, by user: UserRecord, key: IdempotencyKey<Comment>? = nil,
                    _ body: () throws -> String?) throws -> KeyedOutcome<Comment> {
        let ops = operations
        _ = try ops.visibleResponse(user, orgId: orgId, responseId: responseId)
        guard user.has(.reviewer) || user.has(.admin) else { throw ApiError(.forbidden, "Comments need the reviewer or admin role.") }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: responseId, key: key, prepare: { () throws -> String in
            let text = (try body() ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty, text.count <= Self.longest else {
                throw ApiError(.validationFailed, "`body` must be 1 to \(Self.longest) characters.",
                               errors: [FieldError(path: "body", message: "1 to \(Self.longest) characters")])
            }
            return text
        }, write: { text, tx in
            // The response is read again in turn: its revision is the one the comment was made on.
            guard let r = try tx.read.response(orgId: orgId, responseId: responseId) else { throw ApiError.notFound() }
            let detail = CanonicalJSON.string(.object(["comment": .string(text)]))
            try tx.audit(action: Self.action, targetType: "response", targetId: responseId, revision: r.revision, detail: detail)
            return Comment(text: text, actor: user.userId, at: tx.now)
        })
    }

    /// The comments of a response's history, oldest first: each comment and each review step
    /// that carried one.
    public func list(orgId: String, responseId: String, by user: UserRecord) throws -> [Comment] {
        try operations.reviews.history(orgId: orgId, responseId: responseId, by: user).compactMap { entry in
            guard let detail = entry.detail, let parsed = try? JSONParser.parse(Array(detail.utf8)),
                  case .string(let text)? = parsed.objectValue?["comment"] else { return nil }
            return Comment(text: text, actor: entry.actor, at: entry.at)
        }
    }
}
