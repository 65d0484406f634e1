/// A request as handlers see it: its head (method, path, parameters, headers with lowercased
/// names) and its body as sent (JSON routes are buffered up to their limit), for streaming
/// routes the sink the body went to, and for form routes the decoded form.
public struct HTTPRequest: Sendable {
    public let head: RequestHead
    public let body: [UInt8]
    public let sink: (any BodySink)?
    /// A form route's fields (empty on other routes).
    public let form: FormFields

    public init(head: RequestHead, body: [UInt8], sink: (any BodySink)? = nil, form: FormFields = FormFields()) {
        self.head = head
        self.body = body
        self.sink = sink
        self.form = form
    }

    public var method: String { head.method }
    public var path: String { head.path }
    public var route: String { head.route }
    public var query: [String: String] { head.query }
    public func header(_ name: String) -> String? { head.header(name) }
    public func parameter(_ name: String) -> String { head.parameter(name) }
    public var bearerToken: String? { head.bearerToken }
    /// `scheme://host` of this request as the client sees it (behind a TLS proxy: https): what
    /// absolute links the server writes start with.
    public var origin: String { (head.isHTTPS ? "https://" : "http://") + (header("host") ?? "localhost") }
}

extension StringProtocol {
    /// Without the spaces and tabs around it (header values), compared on bytes.
    var trimmingSpacesAndTabs: String {
        let s = Substring(self)
        guard let first = s.utf8.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = s.utf8.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        return String(s[first...last])
    }
}
