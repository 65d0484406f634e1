import SurveyStorage

/// One HEAD, PATCH or DELETE on an upload, as a door drives it: the state machine, and the
/// upload's claim, taken and dropped here alone when the machine says `.claim` and `.release`.
/// Dropping it is the release (`BusySet.Claim`), so a request that is itself dropped half-way
/// releases too, and never twice.
public final class ResumableUploadRequest {
    public let uploadId: String
    private let busy: BusySet
    private var machine: ResumableUpload
    private var claim: BusySet.Claim?

    public init(_ request: ResumableUpload.Request, uploadId: String, busy: BusySet) {
        self.uploadId = uploadId
        self.busy = busy
        machine = ResumableUpload(request)
    }

    public var state: ResumableUpload.State { machine.state }

    /// Sends one event to the machine. `.claim` and `.release` are performed here (a claim's
    /// outcome goes back to the machine); every other action is the caller's to perform.
    public func send(_ event: (inout ResumableUpload) -> ResumableUpload.Action) -> ResumableUpload.Action {
        var action = event(&machine)
        while true {
            switch action {
            case .claim:
                claim = busy.hold(uploadId)
                action = machine.claimed(claim != nil)
            case .release:
                claim = nil
                return .none
            default:
                return action
            }
        }
    }

    /// Ends the request, however it went: `discard` drops the bytes of a chunk that did not
    /// commit, then the claim goes. Ending again does nothing.
    public func end(discard: (ResumableUploadRecord) -> Void = { _ in }) {
        if case .discardChunk(let r) = send({ $0.end() }) {
            discard(r)
            _ = send { $0.chunkDiscarded() }
        }
    }
}
