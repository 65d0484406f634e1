import SurveyDomain

extension ApiError {
    /// The RFC 9457 problem details of this refusal, answered with `status`.
    func problemDocument(status: Int) -> JSONValue {
        var body: [String: JSONValue] = [
            "type": .string("https://surveyd.dev/errors/\(code.rawValue)"),
            "title": .string(code.title),
            "status": .number(Double(status)),
            "detail": .string(detail),
            "errorCode": .number(Double(code.rawValue)),
            "errorName": .string(code.name),
            "retryable": .bool(code.retryable),
        ]
        if !errors.isEmpty {
            body["errors"] = .array(errors.map { .object(["path": .string($0.path), "message": .string($0.message)]) })
        }
        for (k, v) in extra { body[k] = v }
        return .object(body)
    }
}
