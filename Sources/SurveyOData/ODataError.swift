/// A refusal in OData's own terms: `{"error": {"code": "<status>", "message": "<sentence>"}}`
/// with 400 (a query that names what does not exist, or cannot be read) or 501 (an option,
/// function or form of expression this server does not support — never silently ignored).
public struct ODataError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: Int
    public let message: String

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    public static func unsupported(_ message: String) -> ODataError { ODataError(501, message) }
    public static func bad(_ message: String) -> ODataError { ODataError(400, message) }

    public var description: String { "\(status): \(message)" }
}
