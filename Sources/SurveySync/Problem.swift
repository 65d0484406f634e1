import Foundation

/// The server's RFC 9457 problem body (`errorCode`, `retryable`, `errors[]`, and for 1021 the
/// response's current `reviewState` and `revision`).
struct Problem: Sendable, Decodable {
    struct FieldError: Sendable, Decodable {
        let path: String
        let message: String
    }
    let status: Int?
    let detail: String?
    let errorCode: Int?
    let errorName: String?
    let retryable: Bool?
    let errors: [FieldError]?
    let reviewState: String?
    let revision: Int?

    static func decode(_ body: [UInt8]) -> Problem? {
        try? JSONDecoder().decode(Problem.self, from: Data(body))
    }
}
