import SurveyDomain

/// Reading a command's JSON document: anything that is not the shape an operation expects is 1031.
public struct JSONBody: Sendable {
    public let fields: [String: JSONValue]
    public let value: JSONValue

    /// Members already decoded (a part of a document read with the same rules).
    init(fields: [String: JSONValue]) {
        self.fields = fields
        self.value = .object(fields)
    }

    public init(_ bytes: [UInt8]) throws(ApiError) {
        guard !bytes.isEmpty else { throw ApiError.malformed("The request needs a JSON body.") }
        let parsed: JSONValue
        do { parsed = try JSONParser.parse(bytes) } catch {
            throw ApiError.malformed("The body is not valid JSON: \(error.message) at byte \(error.offset).")
        }
        guard case .object(let o) = parsed else { throw ApiError.malformed("The body must be a JSON object.") }
        fields = o
        value = parsed
    }

    public func string(_ key: String) throws(ApiError) -> String {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard case .string(let s) = v else { throw ApiError.malformed("`\(key)` must be a string.") }
        return s
    }

    public func optionalString(_ key: String) throws(ApiError) -> String? {
        guard let v = fields[key], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw ApiError.malformed("`\(key)` must be a string.") }
        return s
    }

    public func bool(_ key: String, default d: Bool? = nil) throws(ApiError) -> Bool {
        guard let v = fields[key], !v.isNull else {
            if let d { return d }
            throw ApiError.malformed("`\(key)` is required.")
        }
        guard case .bool(let b) = v else { throw ApiError.malformed("`\(key)` must be true or false.") }
        return b
    }

    /// nil when absent or null.
    public func optionalBool(_ key: String) throws(ApiError) -> Bool? {
        guard let v = fields[key], !v.isNull else { return nil }
        return try bool(key)
    }

    /// nil when absent or null.
    public func optionalStringArray(_ key: String) throws(ApiError) -> [String]? {
        guard let v = fields[key], !v.isNull else { return nil }
        return try stringArray(key)
    }

    public func int(_ key: String) throws(ApiError) -> Int {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard let i = v.intValue else { throw ApiError.malformed("`\(key)` must be an integer.") }
        return i
    }

    public func stringArray(_ key: String) throws(ApiError) -> [String] {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard case .array(let a) = v else { throw ApiError.malformed("`\(key)` must be an array of strings.") }
        var out: [String] = []
        for e in a {
            guard case .string(let s) = e else { throw ApiError.malformed("`\(key)` must be an array of strings.") }
            out.append(s)
        }
        return out
    }

    public func timestamp(_ key: String) throws(ApiError) -> Int64 {
        let s = try string(key)
        guard let t = Timestamp.parse(s) else {
            throw ApiError(.validationFailed, "`\(key)` must be an RFC 3339 date-time.", errors: [FieldError(path: key, message: "not an RFC 3339 date-time")])
        }
        return t
    }

    public func optionalTimestamp(_ key: String) throws(ApiError) -> Int64? {
        guard let v = fields[key], !v.isNull else { return nil }
        return try timestamp(key)
    }
}
