import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request as the engine sends it.
public struct OutgoingRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]
}

/// The server's answer. Header names are lowercased.
public struct IncomingAnswer: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// How requests leave the device. Any thrown error means "no answer" (timeout, reset, offline):
/// the engine treats it as ambiguous. A transport must not follow redirects: it returns the 3xx
/// as the answer, since following one sends the `Authorization` header to another address.
public protocol HTTPTransport: Sendable {
    func send(_ request: OutgoingRequest) async throws -> IncomingAnswer
}
