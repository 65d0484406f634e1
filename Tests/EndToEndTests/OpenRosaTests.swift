import Foundation
import FoundationXML
import Synchronization
import Testing
import SurveyDomain
@testable import SurveyStorage

/// The OpenRosa door on a real server, driven by a client that behaves as ODK Collect does: the
/// form list and download, and submissions that run the same operation as the JSON API — what
/// is stored afterwards read back through the JSON API and the database.
@Suite struct OpenRosaTests {
    typealias P = FoundationTests

    /// A published JSON form, the list entry Collect sees for it, and its XForm as downloaded.
    struct Published {
        let f: Fixture
        let v: (surveyId: String, versionId: String, contentHash: String)
        let form: CollectClient.ListedForm
        let xform: [UInt8]
        var collect: CollectClient { CollectClient(f) }

        init(_ given: Fixture? = nil, definition: JSONValue = FormLogicTests.roster) throws {
            let f = try given ?? Fixture()
            self.f = f
            v = try f.publishSurvey(definition: definition)
            let list = try CollectClient(f).formList()
            #expect(list.reply.status == 200)
            #expect(list.reply.header("x-openrosa-version") == "1.0")
            form = try #require(list.forms.first)
            let download = try CollectClient(f).download(form)
            #expect(download.status == 200 && download.header("x-openrosa-version") == "1.0")
            xform = download.body
        }

        /// A roster instance Collect would write: two people, the first with a clinic visit.
        func instance(_ instanceID: String, firstAge: String = "41", size: String = "2") throws -> [UInt8] {
            try CollectClient.instance(of: xform, instanceID: instanceID, values: [
                ("consent", "yes"), ("household/size", size), ("eldest", "41"),
                ("household/people[1]/name", "Ana"), ("household/people[1]/age", firstAge), ("household/people[1]/pregnant", "no"),
                ("household/people[1]/visits[1]/visited", "2026-10-01"),
                ("household/people[2]/name", "Leo"), ("household/people[2]/age", "6"),
            ], repeats: [("household/people", 2), ("household/people[2]/visits", 0)])
        }

        func responses() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM responses") }

        func stored(_ instanceID: String) throws -> Reply {
            try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=\(instanceID)", token: f.collectorToken)
        }
    }

    static func message(_ r: Reply) -> String {
        guard !r.body.isEmpty, let document = try? XMLDocument(data: Data(r.body)),
              let message = try? document.nodes(forXPath: "//*[local-name()='message']").first else { return "" }
        return message.stringValue ?? ""
    }

    @Test func theFormListNamesEachFormByItsXFormAndItsHash() throws {
        let p = try Published()
        #expect(p.form.formID == p.v.surveyId)
        #expect(p.form.version == "1")
        #expect(p.form.name == "Household")
        #expect(p.form.hash == "md5:" + Digest.md5Hex(p.xform))
        #expect(p.form.downloadURL.hasPrefix("http://127.0.0.1/v1/key/"))
        try ODKValidate.accept(p.xform, label: "the roster's generated XForm, as the OpenRosa door serves it")
        // The same bytes as the API's XForm of the version.
        #expect(try p.f.client.get("/v1/orgs/\(p.f.orgId)/survey-versions/\(p.v.versionId)/xform", token: p.f.adminToken).body == p.xform)
        // ?formID= lists that form only.
        #expect(try p.collect.formList(formID: p.v.surveyId).forms.count == 1)
        #expect(try p.collect.formList(formID: "no-such-form").forms.isEmpty)
        // A second version replaces the first in the list.
        _ = try p.f.client.post("/v1/orgs/\(p.f.orgId)/surveys/\(p.v.surveyId)/versions", token: p.f.adminToken,
                                ["definition": FormLogicTests.roster.with(title: "Roster, second")])
        let again = try p.collect.formList()
        #expect(again.forms.count == 1 && again.forms.first?.version == "2")
    }

    @Test func aTokenThatIsNotACollectorsIsRefusedWith403NeverA401() throws {
        let p = try Published()
        for token in ["nope", p.f.reviewerToken, p.f.adminToken] {
            let c = CollectClient(p.f, token: token)
            for (r, hasBody) in [(try c.formList().reply, true), (try c.probe(), false), (try c.submit(try p.instance("uuid:token-check-0001")), true)] {
                #expect(r.status == 403, "\(r.text)")
                #expect(r.header("x-openrosa-version") == "1.0")
                #expect(r.header("surveyd-error-code") == "1006")
                if hasBody { #expect(Self.message(r).contains("app token")) }
            }
        }
        #expect(try p.responses() == 0)
    }

    @Test func theProbeAnswers204WithTheLargestBodyTaken() throws {
        let p = try Published()
        let r = try p.collect.probe()
        #expect(r.status == 204)
        #expect(r.header("x-openrosa-version") == "1.0")
        #expect(Int(r.header("x-openrosa-accept-content-length") ?? "") ?? 0 >= 10_000_000)
    }

    @Test func aSubmissionIsStoredOnceAndReadByTheJSONAPI() throws {
        let p = try Published()
        let instance = try p.instance("uuid:6f1c0a3e-0000-4000-8000-000000000001")
        let first = try p.collect.submit(instance)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.header("x-openrosa-version") == "1.0")
        #expect(Self.message(first).contains("received"))
        let stored = try p.stored("uuid:6f1c0a3e-0000-4000-8000-000000000001")
        #expect(stored.status == 200)
        #expect(stored.json?["answers"] == FormLogicTests.goodAnswers)
        #expect(stored.json?["surveyVersionId"]?.stringValue == p.v.versionId)
        // Collect resends when it did not see the answer: 202, still one response.
        let again = try p.collect.submit(instance)
        #expect(again.status == 202, "\(again.text)")
        #expect(try p.responses() == 1)
        // The JSON door sees the same submission as a replay of the same content.
        let json = try p.f.client.post("/v1/orgs/\(p.f.orgId)/responses", token: p.f.collectorToken,
                                       ResponseTests.submission("uuid:6f1c0a3e-0000-4000-8000-000000000001", p.v, answers: FormLogicTests.goodAnswers))
        #expect(json.status == 200, "\(json.text)")
        #expect(try p.responses() == 1)
    }

    @Test func theSameInstanceIDWithOtherAnswersIs409AndChangesNothing() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.instance("uuid:conflict-0001")).status == 201)
        let audit = try p.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let other = try p.collect.submit(try p.instance("uuid:conflict-0001", firstAge: "42"))
        #expect(other.status == 409)
        #expect(other.header("surveyd-error-code") == "1004")
        #expect(try p.stored("uuid:conflict-0001").json?["answers"]?["people"]?.arrayValue?.first?["age"] == 41)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
    }

    @Test func brokenRulesAre422NamingTheQuestionsAndNothingIsStored() throws {
        let p = try Published()
        let audit = try p.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let bad = try p.collect.submit(try p.instance("uuid:rules-0001", firstAge: "130", size: "3"))
        #expect(bad.status == 422, "\(bad.text)")
        #expect(bad.header("surveyd-error-code") == "1002")
        let message = Self.message(bad)
        #expect(message.contains("people[0].age"), "\(message)")
        #expect(message.contains("people: must have at least 3 instances"), "\(message)")
        #expect(try p.responses() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        // The id was not consumed: corrected, the same instance goes through once.
        #expect(try p.collect.submit(try p.instance("uuid:rules-0001")).status == 201)
        #expect(try p.responses() == 1)
    }

    @Test func anExpiredSubscriptionKeepsTheFormOnThePhoneUntilRenewal() throws {
        let p = try Published()
        let instance = try p.instance("uuid:expiry-0001")
        try p.f.expire()
        let audit = try p.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let refused = try p.collect.submit(instance)
        #expect(refused.status == 402)
        #expect(refused.header("surveyd-error-code") == "1001")
        #expect(Self.message(refused).contains("stays on this phone"))
        #expect(try p.responses() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        try p.f.renew()
        #expect(try p.collect.submit(instance).status == 201)
        #expect(try p.collect.submit(instance).status == 202)
        #expect(try p.responses() == 1)
        // The door's outcomes on /metrics.
        let metrics = MetricsText.withoutProcess(try p.f.client.get("/metrics", token: p.f.server.operatorToken).text)
        for line in ["surveyd_openrosa_submissions_total{outcome=\"accepted\"} 1", "surveyd_openrosa_submissions_total{outcome=\"replayed\"} 1",
                     "surveyd_openrosa_submissions_total{outcome=\"refused\",code=\"1001\"} 1"] {
            #expect(metrics.contains(line + "\n"), "\(line)")
        }
    }

    @Test func anUnknownFormOrVersionIs404() throws {
        let p = try Published()
        var xml = String(decoding: try p.instance("uuid:unknown-0001"), as: UTF8.self)
        xml = xml.replacingOccurrences(of: "version=\"1\"", with: "version=\"7\"")
        let r = try p.collect.submit(Array(xml.utf8))
        #expect(r.status == 404, "\(r.text)")
        #expect(r.header("surveyd-error-code") == "1005")
        #expect(Self.message(r).contains("download the blank form again"))
        #expect(try p.responses() == 0)
    }

    @Test func twentyIdenticalPOSTsAtOnceMakeOneResponse() throws {
        let p = try Published()
        let instance = try p.instance("uuid:race-0001")
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            let s = (try? p.collect.submit(instance))?.status ?? -1
            statuses.withLock { $0.append(s) }
        }
        let all = statuses.withLock { $0 }
        #expect(all.filter { $0 == 201 }.count == 1, "\(all)")
        #expect(all.allSatisfy { $0 == 201 || $0 == 202 }, "\(all)")
        #expect(try p.responses() == 1)
    }

    @Test func hostileBodiesAreRefusedAndTheServerStaysUp() throws {
        let p = try Published()
        let c = p.collect
        func post(_ body: [UInt8], _ contentType: String) throws -> Reply {
            try p.f.client.request("POST", c.base + "/submission", body: body,
                                   headers: CollectClient.headers.merging(["Content-Type": contentType]) { a, _ in a })
        }
        // No xml_submission_file part.
        let (noInstance, type1) = CollectClient.multipart([], files: [], incomplete: false)
        let withoutPart = try post(Array(String(decoding: noInstance, as: UTF8.self)
            .replacingOccurrences(of: "xml_submission_file", with: "something_else").utf8), type1)
        #expect(withoutPart.status == 400, "\(withoutPart.text)")
        #expect(Self.message(withoutPart).contains("xml_submission_file"))
        // Malformed XML, and an entity bomb.
        #expect(try c.submit(Array("<data id=\"x\"><unclosed></data>".utf8)).status == 400)
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
            + "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><data id=\"x\"><meta><instanceID>uuid:bomb-0001</instanceID></meta><q>&c;</q></data>"
        let refused = try c.submit(Array(bomb.utf8))
        #expect(refused.status == 400 && Self.message(refused).contains("DOCTYPE"), "\(refused.text)")
        // 100,000 parts.
        var many: [UInt8] = []
        for i in 0..<100_000 { many += Array("--manyparts\r\nContent-Disposition: form-data; name=\"f\(i)\"\r\n\r\nx\r\n".utf8) }
        many += Array("--manyparts--\r\n".utf8)
        let parts = try post(many, "multipart/form-data; boundary=manyparts")
        #expect(parts.status == 413, "\(parts.text)")
        #expect(Self.message(parts).contains("more than"), "\(parts.text)")
        // A body over the limit is refused from its Content-Length.
        let fd = try p.f.client.connect()
        defer { close(fd) }
        let head = "POST \(c.base)/submission HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-OpenRosa-Version: 1.0\r\n"
            + "Content-Type: multipart/form-data; boundary=manyparts\r\nContent-Length: 999999999999\r\n\r\n"
        #expect(RawHTTPClient.sendAll(fd, Array(head.utf8) + Array(repeating: 0x61, count: 16)))
        let over = try RawHTTPClient.readReply(fd)
        #expect(over.status == 413, "\(over.text)")
        #expect(over.header("x-openrosa-version") == "1.0" && Self.message(over).contains("limit"), "\(over.text)")
        #expect(try p.f.client.get("/healthz").status == 200)
        #expect(try p.responses() == 0)
    }

    /// Collect may send its body chunked (no Content-Length): decoded as it streams, the same.
    @Test func aChunkedSubmissionIsTakenAsAnother() throws {
        let p = try Published()
        let (body, contentType) = CollectClient.multipart(try p.instance("uuid:chunked-0001"), files: [], incomplete: false)
        var chunked: [UInt8] = []
        var rest = body[...]
        while !rest.isEmpty {
            let piece = rest.prefix(700)
            chunked += Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8)
            rest = rest.dropFirst(piece.count)
        }
        chunked += Array("0\r\n\r\n".utf8)
        let head = "POST \(p.collect.base)/submission HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-OpenRosa-Version: 1.0\r\n"
            + "Content-Type: \(contentType)\r\nTransfer-Encoding: chunked\r\n\r\n"
        let fd = try p.f.client.connect()
        defer { close(fd) }
        #expect(RawHTTPClient.sendAll(fd, Array(head.utf8) + chunked))
        let r = try RawHTTPClient.readReply(fd)
        #expect(r.status == 201, "\(r.text)")
        #expect(try p.stored("uuid:chunked-0001").json?["answers"] == FormLogicTests.goodAnswers)
    }

    @Test func anXLSFormPublishedThenFilledInAsCollectDoes() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Household roster"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                             body: try FormPublishingTests.bytes("household.xlsx"), headers: ["Content-Type": FormPublishingTests.xlsx])
        #expect(published.status == 201, "\(published.text)")
        let c = CollectClient(f)
        let form = try #require(try c.formList().forms.first)
        let xform = try c.download(form).body
        #expect(form.hash == "md5:" + Digest.md5Hex(xform))
        #expect(xform == (try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(try #require(published.json?["surveyVersionId"]?.stringValue))/xform",
                                          token: f.adminToken)).body)
        try ODKValidate.accept(xform, label: "household.xlsx converted by pyxform, as the OpenRosa door serves it")
        let instance = try CollectClient.instance(of: xform, instanceID: "uuid:xlsform-0001", values: householdValues, repeats: householdRepeats)
        let r = try c.submit(instance)
        #expect(r.status == 201, "\(r.text) \(String(decoding: instance, as: UTF8.self))")
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=uuid:xlsform-0001", token: f.collectorToken)
        #expect(stored.status == 200)
        let expected: JSONValue = [
            "consent": "yes", "visit_date": "2026-11-30", "location": ["lat": 5.6037, "lon": -0.187, "altitude": 61, "accuracy": 4.5],
            "region": "north", "district": "d2", "size": 2, "members": "2", "eldest": "44",
            "people": [["name": "Ama", "age": 44, "birth_region": "south", "birth_district": "d3", "phones": [["number": "0244123456"]]],
                       ["name": "Kofi", "age": 9, "school": "yes"]],
            "assets": ["car", "radio"], "income": 1250.5,
        ]
        #expect(stored.json?["answers"] == expected, "\(stored.text)")
    }

    /// household.xlsx filled in: two people, the second at school with no phone, a car.
    let householdValues: [(String, String)] = [
        ("consent", "yes"), ("visit_date", "2026-11-30"), ("location", "5.6037 -0.187 61 4.5"),
        ("household/region", "north"), ("household/district", "d2"), ("household/size", "2"),
        ("household/people[1]/name", "Ama"), ("household/people[1]/age", "44"), ("household/people[1]/birth_region", "south"),
        ("household/people[1]/birth_district", "d3"), ("household/people[1]/phones[1]/number", "0244123456"),
        ("household/people[2]/name", "Kofi"), ("household/people[2]/age", "9"), ("household/people[2]/school", "yes"),
        ("household/members", "2"), ("household/eldest", "44"), ("assets", "car radio"), ("income", "1250.5"),
    ]
    let householdRepeats: [(String, Int)] = [("household/people", 2), ("household/people[2]/phones", 0)]

    /// A form with two photos, as a household visit has: the house and the water source.
    static let photos: JSONValue = [
        "title": "Visit", "formId": "visit",
        "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true],
            ["id": "house", "type": "file", "label": "House", "accept": ["image/jpeg", "image/png"]],
            ["id": "water", "type": "file", "label": "Water source", "accept": ["image/jpeg"]],
        ],
    ]

    func photoInstance(_ p: Published, _ instanceID: String) throws -> [UInt8] {
        try CollectClient.instance(of: p.xform, instanceID: instanceID, values: [("size", "3"), ("house", "house.png"), ("water", "water.jpg")])
    }

    @Test func attachedFilesBecomeTheResponsesUploadsByteForByte() throws {
        let p = try Published(definition: Self.photos)
        // One part small enough to be held in memory while the form is decoded, one that goes to disk.
        let house = Files.png(3_000), water = Files.jpeg(300_000)
        let files = [CollectClient.File(name: "house.png", contentType: "image/png", bytes: house),
                     CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: water)]
        let instance = try photoInstance(p, "uuid:photos-0001")
        let r = try p.collect.submit(instance, files: files)
        #expect(r.status == 201, "\(r.text)")
        let answers = try #require(try p.stored("uuid:photos-0001").json?["answers"])
        for (question, bytes) in [("house", house), ("water", water)] {
            let id = try #require(answers[question]?["clientUploadId"]?.stringValue)
            let content = try p.f.client.get("/v1/orgs/\(p.f.orgId)/uploads/\(id)/content", token: p.f.reviewerToken)
            #expect(content.status == 200 && content.body == bytes, "\(question)")
        }
        // Resent whole (Collect missed the answer): 202, and nothing stored twice.
        #expect(try p.collect.submit(instance, files: files).status == 202)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 2)
        #expect(try p.responses() == 1)
    }

    /// A submission with photos reads the store twice and commits once: the app token's
    /// collector once the headers are in (nobody without a token makes the server receive a
    /// body), then one snapshot for the submission (the collector again, in the order of checks;
    /// the instance's version and definition; what each photo answers and whether it is stored
    /// already), and one commit: the photos with the response. Its files are received between
    /// the two reads, while no snapshot is held. (On PostgreSQL the snapshot is the write's own
    /// transaction.)
    @Test func aSubmissionWithPhotosReadsTheSubmissionOnceAndCommitsOnce() throws {
        let p = try Published(definition: Self.photos)
        let database = p.f.server.app.database
        // The server's own work (housekeeping, webhook deliveries) may read or commit meanwhile and
        // only ever adds to the counts: each is the least of three submissions of the same kind.
        var n = 0
        func counted(_ files: [CollectClient.File]) throws -> (reads: Int, commits: Int) {
            var least = (reads: Int.max, commits: Int.max)
            for _ in 0..<3 {
                n += 1
                let (reads, commits) = (database.readCount, database.writerStats.commits)
                let r = try p.collect.submit(try photoInstance(p, "uuid:photos-once-\(String(format: "%04d", n))"), files: files)
                #expect(r.status == 201, "\(r.text)")
                least = (min(least.reads, database.readCount - reads), min(least.commits, database.writerStats.commits - commits))
            }
            return least
        }
        let large = [CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000)),
                     CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(300_000))]
        // The first submission of a version also reads its definition once, for the cache.
        #expect(try p.collect.submit(try photoInstance(p, "uuid:photos-warm-0001"), files: large).status == 201)
        // On PostgreSQL the submission's reads are in its write transaction: no read snapshot of their own.
        let snapshot = TestEngine.isPostgres ? 0 : 1
        let withLarge = try counted(large)
        #expect(withLarge.reads == 1 + snapshot && withLarge.commits == 1, "\(withLarge)")
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 8)
        // Photos small enough for the body to be taken before its token is checked: one read.
        let withSmall = try counted([CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000)),
                                     CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(20_000))])
        #expect(withSmall.reads == snapshot && withSmall.commits == 1, "\(withSmall)")
        // Answers alone (a body small enough to take before its token is checked): one read, one commit.
        var least = (reads: Int.max, commits: Int.max)
        for i in 0..<3 {
            let answersAlone = try CollectClient.instance(of: p.xform, instanceID: "uuid:answers-once-000\(i)", values: [("size", "2")])
            let (reads, commits) = (database.readCount, database.writerStats.commits)
            #expect(try p.collect.submit(answersAlone).status == 201)
            least = (min(least.reads, database.readCount - reads), min(least.commits, database.writerStats.commits - commits))
        }
        #expect(least.reads == snapshot && least.commits == 1, "\(least)")
    }

    @Test func aSplitSubmissionIsCreatedByItsLastPOSTOnceEveryFileArrived() throws {
        let p = try Published(definition: Self.photos)
        let instance = try photoInstance(p, "uuid:split-0001")
        let house = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000))
        let water = CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(5_000))
        let first = try p.collect.submit(instance, files: [house], incomplete: true)
        #expect(first.status == 201, "\(first.text)")
        #expect(try p.responses() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
        // A last POST without the other file: 1014 naming it, the file received kept.
        let missing = try CollectClient(p.f).submit(instance, files: [])
        #expect(missing.status == 422, "\(missing.text)")
        #expect(missing.header("surveyd-error-code") == "1014")
        #expect(try p.responses() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
        // The last POST with it: the response, with both files.
        let last = try p.collect.submit(instance, files: [water])
        #expect(last.status == 201, "\(last.text)")
        #expect(try p.responses() == 1)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 2)
    }

    @Test func anAttachmentRefusedWhileExpiredStoresNothing() throws {
        let p = try Published(definition: Self.photos)
        let instance = try photoInstance(p, "uuid:photos-expired-0001")
        let files = [CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000)),
                     CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(5_000))]
        try p.f.expire()
        let refused = try p.collect.submit(instance, files: files)
        #expect(refused.status == 402 && refused.header("surveyd-error-code") == "1001", "\(refused.text)")
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        #expect(try p.responses() == 0)
        try p.f.renew()
        #expect(try p.collect.submit(instance, files: files).status == 201)
        #expect(try p.responses() == 1)
    }

    /// The request log names the door's routes by pattern and never writes the app token that
    /// sits in their path.
    @Test func theRequestLogNeverHoldsTheAppToken() throws {
        let server = ServerProcess()
        let log = server.dataDir + ".requests"
        defer { try? FileManager.default.removeItem(atPath: log) }
        try server.start(requestLog: log)
        let seeded = try server.seed()
        let base = "/v1/key/\(seeded.collectorToken)/orgs/\(seeded.orgId)"
        #expect(try server.client.request("GET", base + "/formList", headers: CollectClient.headers).status == 200)
        #expect(try server.client.request("HEAD", base + "/submission", headers: CollectClient.headers).status == 204)
        #expect(try server.client.request("GET", "/v1/key/not-a-token/orgs/\(seeded.orgId)/formList", headers: CollectClient.headers).status == 403)
        #expect(server.terminate() == 0)
        let lines = try String(contentsOfFile: log, encoding: .utf8)
        #expect(lines.contains("\"route\":\"/v1/key/{token}/orgs/{orgId}/formList\""), "\(lines)")
        #expect(lines.contains("\"errorCode\":1006"), "\(lines)")
        #expect(!lines.contains(seeded.collectorToken) && !lines.contains("not-a-token"), "\(lines)")
    }

    /// A form sent from Collect is a response like any other: a webhook receives it, the review
    /// queue lists it, the export holds it, with its instance ID as the clientSubmissionId.
    @Test func aResponseFromCollectReachesWebhooksReviewAndExports() throws {
        let w = try WebhookTests.World()
        let hook = try w.webhook(w.receiver.url(), events: ["response.accepted"])
        let c = CollectClient(w.f)
        let form = try #require(try c.formList().forms.first)
        let xform = try c.download(form).body
        let instance = try CollectClient.instance(of: xform, instanceID: "uuid:everywhere-0001",
                                                  values: [("size", "4"), ("source", "well"), ("notes", "by the river")])
        #expect(try c.submit(instance).status == 201)
        let stored = try #require(try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses?clientSubmissionId=uuid:everywhere-0001",
                                                     token: w.f.collectorToken).json)
        let responseId = try #require(stored["responseId"]?.stringValue)
        #expect(stored["answers"] == ["size": 4, "source": "well", "notes": "by the river"])
        #expect(w.receiver.wait { $0.count == 1 })
        #expect(WebhookReceiver.verifies(try #require(w.receiver.calls.first), secret: hook.secret))
        #expect(w.receiver.calls.first?.json?["data"]?["responseId"]?.stringValue == responseId)
        let queue = try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses?reviewState=submitted", token: w.f.reviewerToken)
        #expect(queue.json?["items"]?.arrayValue?.contains { $0["responseId"]?.stringValue == responseId } == true)
        let csv = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.v.surveyId)/responses.csv", token: w.f.reviewerToken)
        #expect(csv.status == 200 && csv.text.contains("uuid:everywhere-0001") && csv.text.contains("by the river"), "\(csv.text)")
    }
}
