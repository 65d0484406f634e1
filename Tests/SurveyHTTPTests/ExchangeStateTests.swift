import Foundation
import Synchronization
import Testing
import SurveyDomain
@testable import SurveyHTTP

/// A request's phases without a socket or libmicrohttpd: what each call does with the body, the
/// refusals, a parked answer and the clean-up at the end.
@Suite struct ExchangeStateTests {
    final class RecordingSink: BodySink, @unchecked Sendable {
        // @unchecked: used from the test's thread only.
        var bytes: [UInt8] = []
        var aborted = 0
        var failAfter: Int?
        func write(_ chunk: UnsafeRawBufferPointer) throws {
            if let failAfter, bytes.count + chunk.count > failAfter { throw ApiError(.digestMismatch, "no") }
            bytes += chunk
        }
        func abort() { aborted += 1 }
    }

    final class FakeForm: FormBody {
        var received = 0
        var failWrite = false
        var failFinish = false
        func write(_ chunk: UnsafeRawBufferPointer) throws(ApiError) {
            if failWrite { throw ApiError.malformed("bad form") }
            received += chunk.count
        }
        func finish() throws(ApiError) -> FormFields {
            if failFinish { throw ApiError.malformed("cut short") }
            return FormFields()
        }
    }

    static let head = RequestHead(method: "POST", path: "/x", route: "/x", pathParameters: [:], query: [:], headers: [:])
    static func refuse(_ e: any Error) -> HTTPResponse { .problem((e as? ApiError) ?? ApiError(.internalError)) }

    static func feed(_ state: inout ExchangeState, _ bytes: [UInt8]) -> ExchangeState.ChunkAction {
        bytes.withUnsafeBytes { state.receive($0, refuse: refuse) }
    }

    @Test func aBufferedBodyIsHandedToTheHandlerWhole() {
        var s = ExchangeState(.receiving(.buffer([], limit: 10)))
        #expect(Self.feed(&s, [1, 2, 3]) == .consumed)
        #expect(Self.feed(&s, [4, 5]) == .consumed)
        guard case .run(let request) = s.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("not run"); return }
        #expect(request.body == [1, 2, 3, 4, 5])
        #expect(s.bodyEnded(Self.head, refuse: Self.refuse).isWait)  // a spurious call while it runs
    }

    @Test func aBodyOverItsLimitIsRefusedDiscardedAndAnEndlessOneCutOff() {
        var s = ExchangeState(.receiving(.buffer([], limit: 4)))
        #expect(Self.feed(&s, [1, 2, 3, 4, 5]) == .consumed)
        guard case .refusing(let answer, _) = s.phase else { Issue.record("not refusing"); return }
        #expect(answer.status == 413 && answer.errorCode == 1013)
        let mebibyte = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<16 { #expect(Self.feed(&s, mebibyte) == .consumed) }
        #expect(Self.feed(&s, [0]) == .cutOff)
        guard case .answer(let sent) = s.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("no answer"); return }
        #expect(sent.status == 413)
    }

    @Test func aSinkThatFailsIsAbortedAndItsErrorAnswered() {
        let sink = RecordingSink()
        sink.failAfter = 3
        var s = ExchangeState(.receiving(.sink(sink)))
        #expect(Self.feed(&s, [1, 2]) == .consumed)
        #expect(Self.feed(&s, [3, 4]) == .consumed)
        #expect(sink.aborted == 1 && sink.bytes == [1, 2])
        #expect(Self.feed(&s, [5]) == .consumed)
        #expect(sink.bytes == [1, 2])  // nothing more reaches it
        guard case .answer(let sent) = s.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("no answer"); return }
        #expect(sent.errorCode == 1015)
    }

    @Test func aSinksUncommittedWorkIsDroppedWhenTheRequestEnds() {
        let sink = RecordingSink()
        var s = ExchangeState(.receiving(.sink(sink)))
        _ = Self.feed(&s, [1])
        guard case .run(let request) = s.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("not run"); return }
        #expect(request.sink === sink)
        s.answered()
        #expect(sink.aborted == 0)
        _ = s.completed()
        #expect(sink.aborted == 1)
        _ = s.completed()
        #expect(sink.aborted == 1)  // at most once
    }

    @Test func aFormIsDecodedAsItArrivesAndRefusedWhenItBreaksARule() {
        let form = FakeForm()
        var ok = ExchangeState(.receiving(.form(form)))
        _ = Self.feed(&ok, [1, 2, 3])
        #expect(form.received == 3)
        guard case .run = ok.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("not run"); return }

        let bad = FakeForm()
        bad.failWrite = true
        var refused = ExchangeState(.receiving(.form(bad)))
        _ = Self.feed(&refused, [1])
        guard case .answer(let a) = refused.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("no answer"); return }
        #expect(a.status == 400)

        let cut = FakeForm()
        cut.failFinish = true
        var short = ExchangeState(.receiving(.form(cut)))
        guard case .answer(let b) = short.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("no answer"); return }
        #expect(b.status == 400)
    }

    @Test func aParkedAnswerIsSentWhenReadyOrAsTheConnectionCloses() throws {
        var s = ExchangeState(.receiving(.buffer([], limit: 10)))
        _ = s.bodyEnded(Self.head, refuse: Self.refuse)
        let deferred = DeferredResponse()
        let parked = s.park(deferred)
        #expect(parked == nil)
        #expect(s.bodyEnded(Self.head, refuse: Self.refuse).isWait)  // woken before the answer: spurious
        deferred.complete { .text(201, "made") }
        guard case .finish(let build) = s.bodyEnded(Self.head, refuse: Self.refuse) else { Issue.record("not finished"); return }
        #expect(try build().status == 201)

        // Closed by the client while parked, the answer ready: it is written as the connection closes.
        var closing = ExchangeState(.running)
        let late = DeferredResponse()
        _ = closing.park(late)
        late.complete { .text(200, "late") }
        guard case .answerOnClose(let onClose) = closing.completed() else { Issue.record("not answered on close"); return }
        #expect(try onClose().status == 200 && closing.isAnswered)

        // Closed before the answer: nobody is woken afterwards.
        var gone = ExchangeState(.running)
        let never = DeferredResponse()
        _ = gone.park(never)
        let woken = Mutex(false)
        never.onReady { woken.withLock { $0 = true } }  // what the server's resume would be
        guard case .nothing = gone.completed() else { Issue.record("answered"); return }
        never.complete { .text(200, "") }
        #expect(woken.withLock { $0 } == false)
    }

    @Test func aReadyDeferredAnswerIsNotParked() throws {
        var s = ExchangeState(.running)
        let deferred = DeferredResponse()
        deferred.complete { .text(200, "now") }
        let parked = s.park(deferred)
        let build = try #require(parked)
        #expect(try build().status == 200)
    }

    @Test func anAnsweredRequestIgnoresTheRestOfItsBody() {
        var s = ExchangeState(.answered)
        #expect(Self.feed(&s, [UInt8](repeating: 0, count: 32 << 20)) == .consumed)
        #expect(s.bodyEnded(Self.head, refuse: Self.refuse).isWait)
    }
}

extension ExchangeState.EndAction {
    var isWait: Bool { if case .wait = self { true } else { false } }
}
