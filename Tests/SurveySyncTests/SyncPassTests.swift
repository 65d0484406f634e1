import Foundation
import Synchronization
import Testing
@testable import SurveySync

/// One pass at a time, and a pass whose store fails under it, against scripted answers.
@Suite struct SyncPassTests {
    static let owner = Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1")
    static let stored = IncomingAnswer(status: 201, headers: [:], body: Array(#"{"responseId":"r-1","reviewState":"submitted","revision":1}"#.utf8))
    static let noChanges = IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[],"nextCursor":null}"#.utf8))

    /// Holds the first request until the test lets it go, and says when it has it.
    final class HeldTransport: HTTPTransport {
        let arrived: AsyncStream<Void>
        private let arrivedContinuation: AsyncStream<Void>.Continuation
        private let release: AsyncStream<Void>
        private let releaseContinuation: AsyncStream<Void>.Continuation
        let posts = Mutex(0)

        init() {
            (arrived, arrivedContinuation) = AsyncStream.makeStream()
            (release, releaseContinuation) = AsyncStream.makeStream()
        }

        func letGo() { releaseContinuation.yield() }

        func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
            guard request.method == "POST" else { return SyncPassTests.noChanges }
            let first = posts.withLock { $0 += 1; return $0 == 1 }
            if first {
                arrivedContinuation.yield()
                for await _ in release { break }
            }
            return SyncPassTests.stored
        }
    }

    private func outbox(_ directory: URL, maxStorePages: Int? = nil) throws -> Outbox {
        let outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"), configuration: .init(maxStorePages: maxStorePages))
        outbox.signIn(Session(owner: Self.owner, token: "t"))
        return outbox
    }

    @Test func aSecondPassWhileOneRunsDoesNothing() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-pass")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try outbox(directory)
        let captured = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": 1])
        let transport = HeldTransport()
        let engine = SyncEngine(outbox: outbox, transport: transport)

        let first = Task { await engine.syncNow() }
        var arrivals = transport.arrived.makeAsyncIterator()
        await arrivals.next()  // the first pass is sending the response now
        let second = await engine.syncNow()
        #expect(second.alreadyRunning)
        #expect(second.attempted == 0 && !second.reachedServer)
        transport.letGo()
        let report = await first.value
        #expect(!report.alreadyRunning)
        #expect(report.attempted == 1 && report.nowHeld == 1)
        #expect(transport.posts.withLock { $0 } == 1, "the response was sent once")
        #expect(try outbox.command(captured.id)?.stateLabel == "Submitted")
        // Once a pass is over the next one runs.
        #expect(await engine.syncNow().alreadyRunning == false)
    }

    /// The device fills up while a pass records the server's answer: the pass says so, what was
    /// recorded before stands, and the next pass (with room again) goes on from there.
    @Test func aStoreThatFailsDuringAPassStopsItAndKeepsWhatWasRecorded() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-pass")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pages = 24
        var outbox = try self.outbox(directory, maxStorePages: pages)
        let captured = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": 1])
        // A refusal whose words are larger than the room left in the store.
        let detail = String(repeating: "x", count: 200_000)
        let refusal = IncomingAnswer(status: 422, headers: [:], body: Array(#"{"errorCode":1888,"detail":"\#(detail)"}"#.utf8))
        let full = await SyncEngine(outbox: outbox, transport: PacingTests.ScriptedTransport([refusal, Self.noChanges])).syncNow()
        let error = try #require(full.storeError)
        #expect(error.contains("full"), "\(error)")
        let unchanged = try #require(try outbox.command(captured.id))
        #expect(unchanged.stateLabel == "Saved on this device", "the failed recording left the command as it was")
        #expect(unchanged.attempts == 0 && unchanged.attention.isEmpty)
        #expect(try outbox.metrics().lastSuccessfulSync == nil)
        outbox.close()

        // With room again, the next pass sends it.
        outbox = try self.outbox(directory)
        let report = await SyncEngine(outbox: outbox, transport: PacingTests.ScriptedTransport([Self.stored, Self.noChanges])).syncNow()
        #expect(report.storeError == nil)
        #expect(try outbox.command(captured.id)?.stateLabel == "Submitted")
        #expect(try outbox.metrics().lastSuccessfulSync != nil)
    }

    /// Answers from a list, recording the address of every request.
    final class RecordingTransport: HTTPTransport {
        let answers: Mutex<[IncomingAnswer]>
        let urls = Mutex<[String]>([])
        init(_ answers: [IncomingAnswer]) { self.answers = Mutex(answers) }
        func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
            urls.withLock { $0.append(request.method + " " + request.url.absoluteString) }
            return answers.withLock { $0.isEmpty ? SyncPassTests.noChanges : $0.removeFirst() }
        }
    }

    /// The changes feed moves what the server holds (here: returned for correction) without
    /// anything being sent again, and the next pass reads on after the last change it saw.
    @Test func theChangesFeedMovesAResponseAndIsReadOnFromItsLastChange() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-pass")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try outbox(directory)
        let captured = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": 1])
        // A page that says no more follow (no nextCursor); its change names no revision.
        let page = IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[{"cursor":"c/7+","kind":"response","id":"r-1","reviewState":"returned"}],"nextCursor":null}"#.utf8))
        let transport = RecordingTransport([Self.stored, page])
        let engine = SyncEngine(outbox: outbox, transport: transport)
        _ = await engine.syncNow()
        let returned = try #require(try outbox.command(captured.id))
        #expect(returned.stateLabel == "Returned for correction")
        #expect(returned.revision == 1, "the revision the server last gave is kept")
        _ = await engine.syncNow()
        let urls = transport.urls.withLock { $0 }
        #expect(urls.filter { $0.hasPrefix("POST") }.count == 1, "nothing sent again")
        #expect(urls.last == "GET http://127.0.0.1:9/v1/orgs/org-1/changes?limit=200&after=c%2F7%2B", "\(urls)")
    }
}
