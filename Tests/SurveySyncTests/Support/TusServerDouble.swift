import Foundation
import Synchronization
@testable import SurveySync

/// A transport that answers as surveyd's tus door and upload records do, in memory, with the
/// deviations a real server shows over time (an upload it forgot, an offset it holds that the
/// device does not know, other bytes under the same id), and a log of every request sent.
final class TusServerDouble: HTTPTransport {
    struct Upload { var bytes: [UInt8]; var length: Int }

    struct State {
        var uploads: [String: Upload] = [:]
        var created = 0
        var log: [String] = []
        /// The next HEAD of a known upload answers this status (404, 410) and forgets it.
        var forgetOnHead: Int?
        /// The next PATCH is refused 409 after the server took this many more bytes than it confirmed.
        var conflictAfterTaking: Int?
        /// The upload record names this SHA-256 instead of the received bytes'.
        var recordedSHA256: String?
        /// Requests whose answer is lost on the way back (the write happens; the device sees no answer).
        var loseAnswerTo: Set<String> = []
    }

    let organization: String
    let state = Mutex(State())

    init(organization: String) { self.organization = organization }

    var log: [String] { state.withLock { $0.log } }

    func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
        let path = request.url.path + (request.url.query.map { "?" + $0 } ?? "")
        let offset = request.headers["Upload-Offset"].map { " at \($0)" } ?? ""
        let line = "\(request.method) \(path)\(offset)"
        let (answer, lost) = state.withLock { s -> (IncomingAnswer, Bool) in
            s.log.append(line)
            let answer = respond(request, path: path, &s)
            return (answer, s.loseAnswerTo.remove(line) != nil)
        }
        if lost { throw URLError(.networkConnectionLost) }
        return answer
    }

    private func respond(_ request: OutgoingRequest, path: String, _ s: inout State) -> IncomingAnswer {
        let uploads = "/v1/orgs/\(organization)/uploads/"
        switch (request.method, path) {
        case ("POST", uploads + "resumable"):
            s.created += 1
            let location = uploads + "resumable/u\(s.created)"
            s.uploads[location] = Upload(bytes: [], length: Int(request.headers["Upload-Length"] ?? "") ?? 0)
            return answer(201, ["location": location])
        case ("HEAD", _):
            guard let upload = s.uploads[path] else { return answer(404) }
            if let status = s.forgetOnHead {
                s.forgetOnHead = nil
                s.uploads[path] = nil
                return answer(status)
            }
            return answer(200, ["upload-offset": String(upload.bytes.count), "upload-length": String(upload.length)])
        case ("PATCH", _):
            guard var upload = s.uploads[path] else { return answer(404) }
            guard request.headers["Upload-Offset"] == String(upload.bytes.count) else {
                return answer(409, ["upload-offset": String(upload.bytes.count)], #"{"errorCode":1050}"#)
            }
            if let extra = s.conflictAfterTaking {
                // Bytes that arrived from an attempt whose answer never came back.
                s.conflictAfterTaking = nil
                upload.bytes += request.body.prefix(extra)
                s.uploads[path] = upload
                return answer(409, ["upload-offset": String(upload.bytes.count)], #"{"errorCode":1050}"#)
            }
            upload.bytes += request.body
            s.uploads[path] = upload
            return answer(204, ["upload-offset": String(upload.bytes.count)])
        case ("GET", let p) where p.hasPrefix(uploads):
            // The upload record, once the bytes are complete.
            guard let done = s.uploads.values.first(where: { $0.length > 0 && $0.bytes.count == $0.length }) else { return answer(404) }
            return answer(200, [:], #"{"sha256":"\#(s.recordedSHA256 ?? SHA256Digest.hex(done.bytes))"}"#)
        case ("POST", "/v1/orgs/\(organization)/responses"):
            return answer(201, [:], #"{"responseId":"r-1","reviewState":"none","revision":1}"#)
        case ("GET", let p) where p.hasPrefix("/v1/orgs/\(organization)/changes"):
            return answer(200, [:], #"{"items":[],"nextCursor":null}"#)
        default:
            return answer(404)
        }
    }

    private func answer(_ status: Int, _ headers: [String: String] = [:], _ body: String = "") -> IncomingAnswer {
        IncomingAnswer(status: status, headers: headers, body: Array(body.utf8))
    }
}
