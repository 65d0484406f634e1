import Foundation
import Testing
@testable import SurveySync

/// Seed 001's network cases against a real surveyd through the fault proxy: each asserts the local
/// states, the server's count of accepted responses and the words a person sees.
@Suite struct NetworkFaultTests {
    @Test func airplaneModeBeforeSubmit() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        try f.proxy.goOffline()

        let captured = try f.capture(outbox, size: 4)
        #expect(captured.stateLabel == "Saved on this device")
        let offline = await engine.syncNow()
        #expect(!offline.reachedServer)
        let waiting = try #require(try outbox.command(captured.id))
        #expect(waiting.stateLabel == "Waiting to sync")
        #expect(waiting.ambiguous, "no answer: reconcile before resending")
        #expect(try await f.acceptedCount() == 0)
        #expect(try outbox.metrics().countsByState == [.waitingToSync: 1])
        #expect(try outbox.metrics().oldestQueuedAge != nil)
        #expect(try outbox.metrics().lastSuccessfulSync == nil)

        try f.proxy.goOnline()
        let online = await engine.syncNow()
        #expect(online.reachedServer)
        let submitted = try #require(try outbox.command(captured.id))
        #expect(submitted.stateLabel == "Submitted")
        #expect(submitted.responseId != nil)
        #expect(try await f.acceptedCount() == 1)
        let metrics = try outbox.metrics()
        #expect(metrics.countsByState == [.submitted: 1])
        #expect(metrics.oldestQueuedAge == nil)
        #expect(metrics.lastSuccessfulSync != nil)
    }

    @Test func connectionLostDuringAnUploadResumesAtTheStoredOffset() async throws {
        let f = try await SyncFixture()
        let outbox = try f.device("phone")
        let chunk = 64 * 1024
        let engine = f.engine(outbox, chunkSize: chunk)
        let photo = try f.pngFile(size: 5 * chunk + 1234)
        let response = try f.capture(outbox, size: 3, attachments: [Outbox.Attachment(questionId: "photo", file: photo, contentType: "image/png")])
        let uploadId = try #require(response.dependsOn.first)
        // The first two chunks arrive; the connection dies in the middle of the third.
        try f.proxy.setRules(["pass PATCH", "pass PATCH", "reset_mid_upload PATCH"])

        _ = await engine.syncNow()
        let interrupted = try #require(try outbox.command(uploadId))
        #expect(interrupted.stateLabel == "Waiting to sync")
        #expect(interrupted.uploadOffset == Int64(2 * chunk), "the offset of the last confirmed chunk is stored")
        #expect(interrupted.uploadLocation != nil)
        #expect(try outbox.command(response.id)?.stateLabel == "Saved on this device", "the response waits for its file")
        #expect(try await f.acceptedCount() == 0)

        _ = await engine.syncNow()
        let uploaded = try #require(try outbox.command(uploadId))
        #expect(uploaded.stateLabel == "Completed")
        let note = try #require(uploaded.lastAnswer)
        #expect(note.contains("resumed at byte"), "\(note)")
        let resumedAt = Int64(note.split(separator: " ").last ?? "") ?? -1
        // Each chunk carries its checksum, so the server drops the cut one whole: it resumes exactly
        // where the store said.
        #expect(resumedAt == interrupted.uploadOffset, "resumed at the stored offset, not restarted: \(note)")
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/uploads/resumable") == 1, "the upload was created once")
        #expect(try outbox.command(response.id)?.stateLabel == "Submitted")

        let bytes = try await f.uploadedContent(uploadId)
        #expect(bytes == (try Data(contentsOf: photo)), "the server holds the file byte for byte")
        let accepted = try await f.acceptedResponses()
        #expect(accepted.count == 1)
    }

    @Test func acceptanceWithTheAnswerLostIsReconciledNotDuplicated() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let captured = try f.capture(outbox, size: 5)
        try f.proxy.setRules(["drop_response POST /v1/orgs/\(f.org)/responses"])

        _ = await engine.syncNow()
        let lost = try #require(try outbox.command(captured.id))
        #expect(lost.stateLabel == "Waiting to sync")
        #expect(lost.ambiguous)
        #expect(try await f.acceptedCount() == 1, "the server stored it; only the answer was lost")

        _ = await engine.syncNow()
        let reconciled = try #require(try outbox.command(captured.id))
        #expect(reconciled.stateLabel == "Submitted")
        #expect(reconciled.lastAnswer == "reconciled: the server had it")
        #expect(reconciled.responseId == (try await f.acceptedResponses().first?["responseId"] as? String))
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 1, "reconciled by clientSubmissionId, not resent")
        #expect(f.proxy.delivered("GET /v1/orgs/\(f.org)/responses?clientSubmissionId=\(captured.id)") == 1)
        #expect(try await f.acceptedCount() == 1)
    }

    @Test func duplicateDeliveryIsAcceptedOnce() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let captured = try f.capture(outbox, size: 6)
        try f.proxy.setRules(["duplicate_request POST /v1/orgs/\(f.org)/responses"])

        _ = await engine.syncNow()
        let c = try #require(try outbox.command(captured.id))
        #expect(c.stateLabel == "Submitted")
        #expect(c.lastAnswer == "HTTP 200 replayed: already stored", "the app saw the second delivery's replay")
        let accepted = try await f.acceptedResponses()
        #expect(accepted.count == 1)
        #expect(accepted.first?["responseId"] as? String == c.responseId)
    }
}
