import Foundation

/// One user action's write, as stored on the device: the request exactly as captured plus what the
/// engine has learnt about it since.
public struct OutboxCommand: Sendable, Identifiable {
    /// The client id chosen at capture: `clientSubmissionId`, `clientUploadId`, or the `Idempotency-Key`.
    public let id: String
    public let owner: Owner
    public let kind: CommandKind
    /// A few words the app gave at capture ("Household 4, block 2") to show in its list.
    public let title: String
    public let method: String
    /// The path under the server, e.g. `/v1/orgs/{org}/responses`.
    public let path: String
    public let headers: [String: String]
    /// The request body as captured, sent byte for byte (never re-serialised). Empty for uploads.
    public let body: [UInt8]
    /// Uploads: the device's copy of the file, its size and SHA-256 (lowercase hex).
    public let filePath: String?
    public let fileSize: Int64
    public let fileSHA256: String?
    /// Commands that must be held by the server first (a response waits for the files it cites).
    public let dependsOn: [String]
    public internal(set) var state: CommandState
    public internal(set) var attempts: Int
    public internal(set) var nextAttemptAt: Date
    /// The last attempt's answer is unknown (timeout, reset, 5xx): reconcile before sending again.
    public internal(set) var ambiguous: Bool
    /// A short technical note of the last answer ("HTTP 422 errorCode 1002", "connection lost").
    public internal(set) var lastAnswer: String?
    /// Why a person must act, as sentences to show (the server's `errors[]`, explained).
    public internal(set) var attention: [String]
    /// Once stored by the server: its `responseId` and the revision last seen.
    public internal(set) var responseId: String?
    public internal(set) var revision: Int?
    /// tus: where the upload lives on the server and how many bytes it holds (as last confirmed).
    public internal(set) var uploadLocation: String?
    public internal(set) var uploadOffset: Int64
    public let capturedAt: Date
    public internal(set) var updatedAt: Date

    /// The words a person sees for the command's state.
    public var stateLabel: String { state.label }
}
