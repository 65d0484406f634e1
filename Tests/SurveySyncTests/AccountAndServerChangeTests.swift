import Foundation
import Testing
@testable import SurveySync

/// Seed 001's cases where the world changed while the phone was offline: the token, the role, the
/// server's rules, another device, the subscription — and the owner rules of sign-out.
@Suite struct AccountAndServerChangeTests {
    @Test func tokenExpiryKeepsTheQueueAndAsksToSignIn() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let captured = try f.capture(outbox, size: 4)
        let revoked = try await f.api("DELETE", "/v1/orgs/\(f.org)/users/\(f.collector.userId)/tokens/\(f.collector.tokenId)", token: f.adminToken)
        #expect(revoked.status == 204)

        let refused = await engine.syncNow()
        #expect(refused.signInRequired)
        #expect(outbox.signInRequired)
        #expect(outbox.notices() == ["Sign in again to send your saved work. It stays on this device until then."])
        #expect(try outbox.command(captured.id)?.stateLabel == "Saved on this device", "kept as it was")
        let requestsSoFar = f.proxy.log.count
        _ = await engine.syncNow()
        #expect(f.proxy.log.count == requestsSoFar, "nothing is sent until the person signs in")
        outbox.signOut()
        outbox.signIn(Session(owner: f.owner(f.collector), token: f.collector.token))
        #expect(outbox.signInRequired, "the app relaunched with the refused token from its keychain: still asked")

        let token = try await f.api("POST", "/v1/orgs/\(f.org)/users/\(f.collector.userId)/tokens", token: f.adminToken, [:])
        outbox.signIn(Session(owner: f.owner(f.collector), token: try token.string("token")))
        #expect(outbox.notices().isEmpty)
        _ = await engine.syncNow()
        #expect(try outbox.command(captured.id)?.stateLabel == "Submitted")
        #expect(try await f.acceptedCount() == 1)
    }

    @Test func roleRevocationNeedsAttentionAndIsNotRetriedBlindly() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let captured = try f.capture(outbox, size: 4)
        let roles = try await f.api("PUT", "/v1/orgs/\(f.org)/users/\(f.collector.userId)/roles", token: f.adminToken, ["roles": ["reviewer"]])
        #expect(roles.status == 200)

        _ = await engine.syncNow()
        let c = try #require(try outbox.command(captured.id))
        #expect(c.stateLabel == "Needs attention")
        #expect(c.attention == ["Your account is no longer allowed to send this (your role in the organization changed). Ask your administrator; it will not be sent again automatically."])
        _ = await engine.syncNow()
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 1, "not retried")
        #expect(try outbox.command(captured.id)?.stateLabel == "Needs attention")
        #expect(try await f.acceptedCount() == 0)

        // The admin gives the role back; the person asks to try again: the identical request, once.
        let restored = try await f.api("PUT", "/v1/orgs/\(f.org)/users/\(f.collector.userId)/roles", token: f.adminToken, ["roles": ["collector"]])
        #expect(restored.status == 200)
        try outbox.retry(captured.id)
        #expect(try outbox.command(captured.id)?.stateLabel == "Waiting to sync")
        _ = await engine.syncNow()
        #expect(try outbox.command(captured.id)?.stateLabel == "Submitted")
        #expect(try await f.acceptedCount() == 1)
    }

    /// An admin closes the survey while a response waits on the phone: the server refuses it
    /// (409 / 1023, nothing stored), the person is told the survey closed, and it is not sent
    /// again; once the survey is open again, the person's retry sends the identical request, once.
    @Test func aClosedSurveyNeedsAttentionAndIsSentOnceWhenOpenAgain() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let captured = try f.capture(outbox, size: 4)
        let closed = try await f.api("PUT", "/v1/orgs/\(f.org)/surveys/\(f.surveyId)/state", token: f.adminToken, ["state": "closed"])
        #expect(closed.status == 200)

        _ = await engine.syncNow()
        let c = try #require(try outbox.command(captured.id))
        #expect(c.stateLabel == "Needs attention")
        #expect(c.attention == ["The survey was closed before this response reached the server, so it takes no new responses. Your answers are kept on this device; ask your administrator whether the survey will open again. It will not be sent again automatically."])
        #expect(c.lastAnswer == "HTTP 409 errorCode 1023")
        _ = await engine.syncNow()
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 1, "not retried")
        #expect(try await f.acceptedCount() == 0)

        let open = try await f.api("PUT", "/v1/orgs/\(f.org)/surveys/\(f.surveyId)/state", token: f.adminToken, ["state": "open"])
        #expect(open.status == 200)
        try outbox.retry(captured.id)
        _ = await engine.syncNow()
        #expect(try outbox.command(captured.id)?.stateLabel == "Submitted")
        #expect(try await f.acceptedCount() == 1)
    }

    /// The app validated against its own (older, laxer) rules; the server's rules say 50 at most.
    @Test func serverValidationChangeNeedsAttentionWithTheFieldsSentence() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let fine = try f.capture(outbox, size: 12)
        let tooMany = try f.capture(outbox, size: 80)

        _ = await engine.syncNow()
        let refused = try #require(try outbox.command(tooMany.id))
        #expect(refused.stateLabel == "Needs attention")
        #expect(refused.attention == ["Check the answer to household_size: must be at most 50."])
        #expect(refused.lastAnswer == "HTTP 422 errorCode 1002")
        #expect(try outbox.command(fine.id)?.stateLabel == "Submitted", "one refusal does not hold back other work")
        _ = await engine.syncNow()
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 2, "the refused one is not sent again")
        #expect(try await f.acceptedCount() == 1)
        try outbox.discard(tooMany.id)
        #expect(try outbox.commands().map(\.id) == [fine.id])
    }

    @Test func twoDevicesResubmittingOneReturnedResponse() async throws {
        let f = try await SyncFixture()
        let phone = try f.device("phone")
        let tablet = try f.device("tablet")
        let original = try f.capture(phone, size: 14)
        _ = await f.engine(phone).syncNow()
        let responseId = try #require(try phone.command(original.id)?.responseId)
        try await f.review(responseId, "startReview", expectedRevision: 1)
        try await f.review(responseId, "returnForCorrection", expectedRevision: 2, comment: "14 people? Please recount.")

        // The changes feed tells the phone; nothing is resent.
        _ = await f.engine(phone).syncNow()
        let returned = try #require(try phone.command(original.id))
        #expect(returned.stateLabel == "Returned for correction")
        #expect(returned.revision == 3)
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 1)

        // Both devices correct it from revision 3; the phone's arrives first.
        let fromPhone = try phone.captureResubmission(responseId: responseId, expectedRevision: 3, surveyVersionId: f.versionId,
                                                      contentHash: f.contentHash, answers: ["household_size": 4, "water_source": "well"])
        let fromTablet = try tablet.captureResubmission(responseId: responseId, expectedRevision: 3, surveyVersionId: f.versionId,
                                                        contentHash: f.contentHash, answers: ["household_size": 5, "water_source": "well"])
        _ = await f.engine(phone).syncNow()
        _ = await f.engine(tablet).syncNow()
        #expect(try phone.command(fromPhone.id)?.stateLabel == "Submitted")
        let lost = try #require(try tablet.command(fromTablet.id))
        #expect(lost.stateLabel == "Needs attention")
        #expect(lost.attention == ["This response changed on the server before your correction arrived (it is now submitted, revision 4): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."])
        _ = await f.engine(tablet).syncNow()
        #expect(f.proxy.delivered("/responses/\(responseId)/resubmit") == 2, "one each, the refused one not retried")

        let accepted = try await f.acceptedResponses()
        #expect(accepted.count == 1)
        let current = try await f.api("GET", "/v1/orgs/\(f.org)/responses/\(responseId)", token: f.adminToken)
        #expect(current.json["revision"] as? Int == 4)
        #expect((current.json["answers"] as? [String: Any])?["household_size"] as? Int == 4, "the phone's correction won")

        try await f.review(responseId, "startReview", expectedRevision: 4)
        try await f.review(responseId, "approve", expectedRevision: 5)
        _ = await f.engine(phone).syncNow()
        #expect(try phone.commands().map(\.stateLabel) == ["Completed", "Completed"])
    }

    @Test func subscriptionExpiringMidCollectionWaitsForRenewalThenSendsEachOnce() async throws {
        let f = try await SyncFixture()
        let (outbox, engine) = try f.phone()
        let before = try f.capture(outbox, size: 2)
        _ = await engine.syncNow()
        #expect(try outbox.command(before.id)?.stateLabel == "Submitted")

        try await f.setSubscription(active: false)
        let later = [try f.capture(outbox, size: 3), try f.capture(outbox, size: 4), try f.capture(outbox, size: 5)]
        let refused = await engine.syncNow()
        #expect(refused.renewalRequired)
        #expect(try later.map { try outbox.command($0.id)?.stateLabel } == ["Waiting for renewal", "Waiting for renewal", "Waiting for renewal"])
        #expect(outbox.notices() == ["Your organization's subscription has to be renewed before your work can be sent. It stays on this device and goes as soon as the subscription is renewed."])
        let postsWhileExpired = f.proxy.delivered("POST /v1/orgs/\(f.org)/responses")
        _ = await engine.syncNow()
        _ = await engine.syncNow()
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == postsWhileExpired, "no automatic retries while expired")
        #expect(f.proxy.delivered("GET /v1/orgs/\(f.org)/subscription") == 2, "only the subscription is read")
        #expect(try await f.acceptedCount() == 1)

        try await f.setSubscription(active: true)
        _ = await engine.syncNow()
        _ = await engine.syncNow()
        #expect(try outbox.commands().map(\.stateLabel) == ["Submitted", "Submitted", "Submitted", "Submitted"])
        #expect(outbox.notices().isEmpty)
        let accepted = try await f.acceptedResponses()
        #expect(accepted.count == 4)
        #expect(Set(accepted.compactMap { $0["clientSubmissionId"] as? String }) == Set(([before] + later).map(\.id)), "exactly one copy of each")
    }

    @Test func signingOutSuspendsTheQueueAndAnotherUserSeesNothingOfIt() async throws {
        let f = try await SyncFixture()
        let outbox = try f.device("shared-phone")
        let engine = f.engine(outbox)
        try f.proxy.goOffline()
        let tess = try f.capture(outbox, size: 4)
        outbox.signOut()
        #expect(try outbox.commands().isEmpty)
        #expect(await engine.syncNow().notSignedIn)

        let other = try await f.createUser("Omar Field", roles: ["collector"])
        outbox.signIn(Session(owner: f.owner(other), token: other.token))
        #expect(try outbox.commands().isEmpty, "another person sees nothing of it")
        #expect(try outbox.metrics().countsByState.isEmpty)
        try f.proxy.goOnline()
        _ = await engine.syncNow()
        #expect(try await f.acceptedCount() == 0, "and nothing of it is sent with their token")

        outbox.signIn(Session(owner: f.owner(f.collector), token: f.collector.token))
        #expect(try outbox.commands().map(\.id) == [tess.id])
        #expect(try outbox.command(tess.id)?.stateLabel == "Saved on this device", "untouched while signed out")
        _ = await engine.syncNow()
        #expect(try outbox.command(tess.id)?.stateLabel == "Submitted")
        #expect(try await f.acceptedCount() == 1)
    }

    /// A changes cursor the server no longer reads (the plain number an earlier server gave, now
    /// that cursors are sealed) is dropped and the feed followed from its start: the return for
    /// correction still reaches the phone, and nothing is resent.
    @Test func aCursorTheServerNoLongerReadsRestartsTheFeed() async throws {
        let f = try await SyncFixture()
        let (phone, engine) = try f.phone()
        let captured = try f.capture(phone, size: 14)
        _ = await engine.syncNow()
        let responseId = try #require(try phone.command(captured.id)?.responseId)
        let owner = f.owner(f.collector)
        var record = try phone.store.ownerRecord(owner)
        record.changesCursor = "7"
        try phone.store.saveOwnerRecord(owner, record)
        try await f.review(responseId, "startReview", expectedRevision: 1)
        try await f.review(responseId, "returnForCorrection", expectedRevision: 2, comment: "Please recount.")
        _ = await engine.syncNow()
        #expect(try phone.command(captured.id)?.stateLabel == "Returned for correction")
        #expect(try phone.store.ownerRecord(owner).changesCursor?.hasPrefix("cc1.") == true)
        #expect(f.proxy.delivered("POST /v1/orgs/\(f.org)/responses") == 1)
    }
}
