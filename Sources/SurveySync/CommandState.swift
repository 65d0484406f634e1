/// Where a command is, as a person sees it. The `label`s are part of the API: apps show them and
/// tests assert them.
public enum CommandState: String, Sendable, CaseIterable, Codable {
    /// Committed on the device; no attempt to send it yet.
    case savedOnDevice = "saved"
    /// Tried at least once without a definitive answer; it goes again by itself.
    case waitingToSync = "waiting"
    /// The server stored it; a reviewer has not finished with it.
    case submitted
    /// Nothing more will happen to it: accepted (no review), approved, or a file the server holds.
    case completed
    /// A reviewer sent it back; a correction is new work (`Outbox.captureResubmission`).
    case returnedForCorrection = "returned"
    /// A reviewer rejected it.
    case rejected
    /// The server refused it for good; a person has to act. `OutboxCommand.attention` says why.
    case needsAttention = "attention"
    /// The organization's subscription lapsed (1001): kept as it is, sent again after renewal.
    case waitingForRenewal = "renewal"

    public var label: String {
        switch self {
        case .savedOnDevice: "Saved on this device"
        case .waitingToSync: "Waiting to sync"
        case .submitted: "Submitted"
        case .completed: "Completed"
        case .returnedForCorrection: "Returned for correction"
        case .rejected: "Rejected"
        case .needsAttention: "Needs attention"
        case .waitingForRenewal: "Waiting for renewal"
        }
    }

    /// States the engine still has to send.
    var isQueued: Bool { self == .savedOnDevice || self == .waitingToSync || self == .waitingForRenewal }
    /// States in which the server holds the command's effect.
    var isHeldByServer: Bool { [.submitted, .completed, .returnedForCorrection, .rejected].contains(self) }
}

/// What a command does on the server.
public enum CommandKind: String, Sendable, Codable {
    /// `POST /v1/orgs/{org}/responses`, keyed by `clientSubmissionId`.
    case response
    /// `POST .../responses/{responseId}/resubmit` with an `Idempotency-Key`.
    case resubmission
    /// A file sent through tus (`.../uploads/resumable`), keyed by `clientUploadId`.
    case upload
}
