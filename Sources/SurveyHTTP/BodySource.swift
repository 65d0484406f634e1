/// A response body produced as it is sent (an export): libmicrohttpd asks for the next bytes
/// when the socket can take them, so memory stays flat and a client that reads slowly slows the
/// producer down instead of filling memory. Sent with chunked encoding (its length is unknown).
public protocol BodySource: AnyObject, Sendable {
    /// Fills the start of `buffer`; returns the count, or 0 at the end. A thrown error ends the
    /// response without its final chunk, so the client sees it was cut short.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// The response is over — sent, failed, or the client went away. Called once.
    func close()
}

extension HTTPResponse {
    /// A 200 whose body `source` produces while it is sent.
    /// `size`: when known, sent as Content-Length (else the body is chunked).
    public static func stream(_ source: any BodySource, size: Int? = nil, headers: [(String, String)]) -> HTTPResponse {
        var r = HTTPResponse(status: 200, headers: headers)
        r.stream = source
        r.streamSize = size
        return r
    }
}

/// What libmicrohttpd holds for a streamed body (retained until its free callback).
final class StreamBox {
    let source: any BodySource
    init(_ source: any BodySource) { self.source = source }
}
