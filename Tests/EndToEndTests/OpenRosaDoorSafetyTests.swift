import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// The OpenRosa door as a careless collector, an attacker and ODK Collect itself use it: what
/// Collect writes is read as Collect means it, what the door serves is safe to open in a browser,
/// nobody without a token gets a byte of a body stored, and a refused POST keeps none of its files.
@Suite struct OpenRosaDoorSafetyTests {
    typealias Published = OpenRosaTests.Published

    static let measures: JSONValue = [
        "title": "Water point", "formId": "water_point",
        "questions": [
            ["id": "income", "type": "decimal", "label": "Monthly income"],
            ["id": "chlorine", "type": "decimal", "label": "Chlorine (mg/L)"],
            ["id": "point", "type": "geopoint", "label": "Where"],
            ["id": "taps", "type": "integer", "label": "Taps"],
        ],
    ]

    func measured(_ p: Published, _ id: String, _ values: [(String, String)]) throws -> [UInt8] {
        try CollectClient.instance(of: p.xform, instanceID: id, values: values)
    }

    @Test func decimalsAndPointsAreReadAsJavaRosaWritesThem() throws {
        let p = try Published(definition: Self.measures)
        // Java's Double.toString: scientific notation from 10^7 up and below 10^-3.
        let r = try p.collect.submit(try measured(p, "uuid:decimals-0001", [("income", "1.5E7"), ("chlorine", "5.0E-4"),
                                                                          ("point", "5.0E-4 32.58 1190.0 4.5"), ("taps", "2147483647")]))
        #expect(r.status == 201, "\(OpenRosaTests.message(r))")
        let answers = try #require(try p.stored("uuid:decimals-0001").json?["answers"])
        #expect(answers["income"] == 15_000_000)
        #expect(answers["chlorine"] == 0.0005)
        #expect(answers["point"] == ["lat": 0.0005, "lon": 32.58, "altitude": 1190, "accuracy": 4.5])
        #expect(answers["taps"] == 2_147_483_647)
        let big = try p.collect.submit(try measured(p, "uuid:decimals-0002", [("income", "1.23456789E8")]))
        #expect(big.status == 201, "\(OpenRosaTests.message(big))")
        #expect(try p.stored("uuid:decimals-0002").json?["answers"]?["income"] == 123_456_789)
        // What Java would also read but no ODK app writes, and what overflows, stays refused.
        for (n, text) in ["Infinity", "NaN", "0x1p3", "1E400", "1.5E", "E7", "1.5E7.0", "+1.5"].enumerated() {
            let id = "uuid:decimals-bad-\(n)000"
            let refused = try p.collect.submit(try measured(p, id, [("income", text)]))
            #expect(refused.status == 422, "\(text): \(refused.status) \(OpenRosaTests.message(refused))")
            #expect(OpenRosaTests.message(refused).contains("income: must be a number"), "\(text): \(OpenRosaTests.message(refused))")
        }
        #expect(try p.responses() == 2)
    }

    @Test func anIntegerBeyondWhatODKAppsHoldIsRefusedAtTheDoorOnly() throws {
        let p = try Published(definition: Self.measures)
        for (n, text) in ["2147483648", "-2147483649", "99999999999999999999"].enumerated() {
            let r = try p.collect.submit(try measured(p, "uuid:int32-\(n)0000", [("taps", text)]))
            #expect(r.status == 422, "\(text): \(r.status)")
            #expect(r.header("surveyd-error-code") == "1002")
            #expect(OpenRosaTests.message(r).contains("taps: too large for an integer question"), "\(OpenRosaTests.message(r))")
        }
        #expect(try p.responses() == 0)
        #expect(try p.collect.submit(try measured(p, "uuid:int32-min-0001", [("taps", "-2147483648")])).status == 201)
        // The JSON door keeps its own rules: a JSON number is not bounded by JavaRosa's integer.
        let json = try p.f.client.post("/v1/orgs/\(p.f.orgId)/responses", token: p.f.collectorToken,
                                       ResponseTests.submission("json-int32-0001", p.v, answers: ["taps": 2_147_483_648]))
        #expect(json.status == 201, "\(json.text)")
    }

    static let household: JSONValue = [
        "title": "Household", "formId": "household_members",
        "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true],
            ["id": "members", "type": "repeat", "label": "Member", "repeatCount": "${size}", "children": [
                ["id": "name", "type": "text", "label": "Name", "required": true],
            ]],
        ],
    ]

    @Test func aRepeatKeepsTheInstancesFilledBeforeItsCountWasLowered() throws {
        let p = try Published(definition: Self.household)
        func instance(_ id: String, size: Int, members: Int) throws -> [UInt8] {
            try CollectClient.instance(of: p.xform, instanceID: id, values: [("size", String(size))]
                                           + (1...members).map { ("members[\($0)]/name", "Person \($0)") }, repeats: [("members", members)])
        }
        // Five members filled, then the size lowered to 4: Collect sends all five.
        let more = try p.collect.submit(try instance("uuid:lowered-0001", size: 4, members: 5))
        #expect(more.status == 201, "\(OpenRosaTests.message(more))")
        #expect(try p.stored("uuid:lowered-0001").json?["answers"]?["members"]?.arrayValue?.count == 5)
        // Fewer than the count is still refused at the repeat.
        let fewer = try p.collect.submit(try instance("uuid:lowered-0002", size: 4, members: 3))
        #expect(fewer.status == 422)
        #expect(OpenRosaTests.message(fewer).contains("members: must have at least 4 instances (its repeat count), has 3"), "\(OpenRosaTests.message(fewer))")
        #expect(try p.responses() == 1)
    }

    /// An XForm is XHTML: a script in its head would run were it rendered in the server's origin.
    static let scriptedXForm = """
        <?xml version="1.0"?>
        <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
        <h:head><h:title>Scripted</h:title><h:script>fetch('/console/')</h:script>
        <model><instance><data id="scripted"><a/><meta><instanceID/></meta></data></instance>
        <bind nodeset="/data/a" type="string"/><bind nodeset="/data/meta/instanceID" type="string" readonly="true()"/></model></h:head>
        <h:body><input ref="/data/a"><label>A</label></input></h:body></h:html>
        """

    @Test func everyDocumentTheDoorServesIsSafeToOpenInABrowser() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Scripted"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let xform = Self.scriptedXForm
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                              body: Array(xform.utf8), headers: ["Content-Type": "application/xml"])
        let c = CollectClient(f)
        var replies: [(String, Reply)] = []
        if published.status == 201 {
            let list = try c.formList()
            replies.append(("formList", list.reply))
            let form = try #require(list.forms.first)
            replies.append(("form.xml", try c.download(form)))
        } else {
            // Refusing the script at publication is as good as serving it inert.
            #expect(published.status == 422, "\(published.text)")
            replies.append(("formList", try c.formList().reply))
        }
        replies.append(("a refusal", try c.submit(Array("<data/>".utf8))))
        replies.append(("the probe", try c.probe()))
        replies.append(("a refusal for another token", try CollectClient(f, token: "nope").formList().reply))
        for (what, r) in replies {
            #expect(r.header("content-security-policy")?.contains("sandbox") == true, "\(what): \(r.headers)")
            #expect(r.header("content-security-policy")?.contains("default-src 'none'") == true, "\(what)")
            #expect(r.header("x-content-type-options") == "nosniff", "\(what)")
        }
    }

    @Test func aBodyIsNotReadBeforeItsTokenIsChecked() throws {
        let p = try Published(definition: OpenRosaTests.photos)
        let tmp = p.f.server.dataDir + "/tmp"
        for token in ["not-a-token-at-all", p.f.reviewerToken] {
            let fd = try p.f.client.connect()
            defer { close(fd) }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            // 90 MB announced; 2 MB of a file part sent; the rest never comes.
            let boundary = "----CollectBoundaryH4"
            let head = "POST /v1/key/\(token)/orgs/\(p.f.orgId)/submission HTTP/1.1\r\nHost: 127.0.0.1\r\nX-OpenRosa-Version: 1.0\r\n"
                + "Content-Type: multipart/form-data; boundary=\(boundary)\r\nContent-Length: \(90 << 20)\r\n\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"house.png\"; filename=\"house.png\"\r\nContent-Type: image/png\r\n\r\n"
            RawHTTPClient.sendAll(fd, Array(head.utf8))
            RawHTTPClient.sendAll(fd, Files.png(2 << 20))
            let started = ContinuousClock.now
            let r = try RawHTTPClient.readReply(fd)
            #expect(r.status == 403, "\(r.status) \(r.text)")
            #expect(r.header("surveyd-error-code") == "1006")
            #expect(ContinuousClock.now - started < .seconds(4), "the answer waited for the body")
            #expect(ServerProcess.regularFiles(under: tmp).isEmpty, "\(ServerProcess.regularFiles(under: tmp))")
        }
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
    }

    /// A small body is taken whole before its token is checked; the submission's snapshot
    /// refuses the caller first, and the files the body carried are gone with the refusal.
    @Test func aSmallBodyFromAnotherTokenIsRefusedAndKeepsNothing() throws {
        let p = try Published(definition: OpenRosaTests.photos)
        let instance = try OpenRosaTests().photoInstance(p, "uuid:small-refused-0001")
        let files = [CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000)),
                     CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(5_000))]
        for token in ["not-a-token-at-all", p.f.reviewerToken] {
            let r = try CollectClient(p.f, token: token).submit(instance, files: files)
            #expect(r.status == 403 && r.header("surveyd-error-code") == "1006", "\(r.status) \(r.text)")
            let partial = try CollectClient(p.f, token: token).submit(instance, files: files, incomplete: true)
            #expect(partial.status == 403, "\(partial.status) \(partial.text)")
        }
        #expect(ServerProcess.regularFiles(under: p.f.server.dataDir + "/tmp").isEmpty)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        #expect(try p.responses() == 0)
    }

    static let pump: JSONValue = [
        "title": "Pump", "formId": "pump_check",
        "questions": [
            ["id": "pumps_working", "type": "integer", "label": "Working pumps", "maximum": 50],
            ["id": "house", "type": "file", "label": "Photo", "accept": ["image/png"]],
        ],
    ]

    @Test func aRefusedSubmissionKeepsNoneOfItsFilesAndTheCorrectedOneGoesThroughOnce() throws {
        let p = try Published(definition: Self.pump)
        func instance(_ pumps: String) throws -> [UInt8] {
            try CollectClient.instance(of: p.xform, instanceID: "uuid:pump-0001", values: [("pumps_working", pumps), ("house", "house.png")])
        }
        func uploads() throws -> Int64 { try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") }
        let audit = try p.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let first = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(4_000))
        let refused = try p.collect.submit(try instance("999"), files: [first])
        #expect(refused.status == 422, "\(OpenRosaTests.message(refused))")
        #expect(OpenRosaTests.message(refused).contains("pumps_working"))
        #expect(try uploads() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        #expect(ServerProcess.regularFiles(under: p.f.server.dataDir + "/tmp").isEmpty)
        // Corrected, the photo retaken under the same name: accepted once.
        let retaken = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(5_000))
        let corrected = try p.collect.submit(try instance("12"), files: [retaken])
        #expect(corrected.status == 201, "\(OpenRosaTests.message(corrected))")
        #expect(try p.collect.submit(try instance("12"), files: [retaken]).status == 202)
        #expect(try uploads() == 1 && p.responses() == 1)
        // The same instanceID with other content and another photo: 409, and nothing of it kept.
        let other = try p.collect.submit(try instance("13"), files: [CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(6_000))])
        #expect(other.status == 409, "\(OpenRosaTests.message(other))")
        #expect(try uploads() == 1 && p.responses() == 1)
        let id = try #require(try p.stored("uuid:pump-0001").json?["answers"]?["house"]?["clientUploadId"]?.stringValue)
        #expect(try p.f.client.get("/v1/orgs/\(p.f.orgId)/uploads/\(id)/content", token: p.f.reviewerToken).body == retaken.bytes)
    }

    @Test func aSplitSubmissionsFilesAreItsCollectorsOwn() throws {
        let p = try Published(definition: OpenRosaTests.photos)
        let other = try p.f.client.post("/v1/orgs/\(p.f.orgId)/users", token: p.f.adminToken, ["name": "Bea", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        let instance = try CollectClient.instance(of: p.xform, instanceID: "uuid:claimed-0001",
                                                  values: [("size", "3"), ("house", "house.png"), ("water", "water.jpg")])
        let house = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000))
        let water = CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(4_000))
        // A's first POST carries both photos, and says more is to come.
        #expect(try p.collect.submit(instance, files: [house, water], incomplete: true).status == 201)
        // B's last POST of the same instance names A's files without carrying them.
        let claimed = try CollectClient(p.f, token: otherToken).submit(instance)
        #expect(claimed.status == 422, "\(OpenRosaTests.message(claimed))")
        #expect(claimed.header("surveyd-error-code") == "1014")
        #expect(try p.responses() == 0)
        // A's own last POST creates A's response.
        let mine = try p.collect.submit(instance)
        #expect(mine.status == 201, "\(OpenRosaTests.message(mine))")
        #expect(try p.stored("uuid:claimed-0001").json?["submittedBy"]?.stringValue == p.f.collectorId)
    }

    @Test func aLastPOSTMissingAFileKeepsTheFilesItCarried() throws {
        let p = try Published(definition: OpenRosaTests.photos)
        let instance = try CollectClient.instance(of: p.xform, instanceID: "uuid:kept-0001",
                                                  values: [("size", "3"), ("house", "house.png"), ("water", "water.jpg")])
        let house = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_000))
        let water = CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(4_000))
        let missing = try p.collect.submit(instance, files: [house])
        #expect(missing.status == 422 && missing.header("surveyd-error-code") == "1014", "\(OpenRosaTests.message(missing))")
        // Named as the phone names it, not by its upload id.
        #expect(OpenRosaTests.message(missing).contains("The file water.jpg (question water) has not arrived"), "\(OpenRosaTests.message(missing))")
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
        #expect(try p.collect.submit(instance, files: [water]).status == 201)
        #expect(try p.responses() == 1)
    }

    @Test func aTitleXMLCannotCarryIsRefusedAndTheFormListStaysADocument() throws {
        let p = try Published()
        for title in ["Water\u{1}point", "Esc\u{1B}ape", "Tab\u{0B}bed", "No\u{FFFE}char"] {
            let r = try p.f.client.post("/v1/orgs/\(p.f.orgId)/surveys", token: p.f.adminToken, ["title": .string(title)])
            #expect(r.status == 422, "\(title.debugDescription): \(r.text)")
            #expect(r.json?["errors"]?.arrayValue?.first?["path"] == "title")
        }
        // A title stored before such text was refused does not take the list down.
        let s = try p.f.client.post("/v1/orgs/\(p.f.orgId)/surveys", token: p.f.adminToken, ["title": "Water point"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        _ = try p.f.client.post("/v1/orgs/\(p.f.orgId)/surveys/\(surveyId)/versions", token: p.f.adminToken,
                                ["definition": Fixture.definition])
        // No API stores such a title any more: the test reaches into the store.
        try p.f.server.app.database.writer.submit { conn in
            try conn.run("UPDATE surveys SET title = ? WHERE survey_id = ?", [.text("Water\u{1}point"), .text(surveyId)])
        }
        let list = try p.collect.formList()
        #expect(list.reply.status == 200, "\(list.reply.text)")
        #expect(Set(list.forms.map(\.name)) == ["Household", "Waterpoint"])
    }

    @Test func aPOSTWithTwoFormsOrOneFileForTwoQuestionsIsRefusedAndStoresNothing() throws {
        let p = try Published(definition: OpenRosaTests.photos)
        func instance(_ id: String, house: String, water: String) throws -> [UInt8] {
            try CollectClient.instance(of: p.xform, instanceID: id, values: [("size", "3"), ("house", house), ("water", water)])
        }
        // Two xml_submission_file parts: which form was meant cannot be told.
        let boundary = "----CollectBoundaryTwoForms"
        func part(_ xml: [UInt8]) -> [UInt8] {
            Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"xml_submission_file\"; filename=\"instance.xml\"\r\nContent-Type: text/xml\r\n\r\n".utf8)
                + xml + Array("\r\n".utf8)
        }
        let body = part(try instance("uuid:twice-0001", house: "", water: "")) + part(try instance("uuid:twice-0002", house: "", water: ""))
            + Array("--\(boundary)--\r\n".utf8)
        let both = try p.f.client.request("POST", p.collect.base + "/submission", body: body,
                                          headers: CollectClient.headers.merging(["Content-Type": "multipart/form-data; boundary=\(boundary)"]) { a, _ in a })
        #expect(both.status == 400, "\(both.status) \(OpenRosaTests.message(both))")
        #expect(OpenRosaTests.message(both).contains("more than one xml_submission_file"))
        // One photo named by two questions would be one upload answering both.
        let same = CollectClient.File(name: "same.jpg", contentType: "image/jpeg", bytes: Files.jpeg(3_000))
        let r = try p.collect.submit(try instance("uuid:same-file-0001", house: "same.jpg", water: "same.jpg"), files: [same])
        #expect(r.status == 422, "\(OpenRosaTests.message(r))")
        #expect(OpenRosaTests.message(r).contains("water: names the file same.jpg, which house names too"), "\(OpenRosaTests.message(r))")
        #expect(try p.responses() == 0)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
    }

    /// An empty token is a missing token: 403 with the token's message, never a 404 "no route".
    @Test func anEmptyTokenIsAMissingTokenNotAMissingRoute() throws {
        let p = try Published()
        let base = "/v1/key//orgs/\(p.f.orgId)"
        for (method, path) in [("GET", "/formList"), ("HEAD", "/submission"), ("POST", "/submission"), ("GET", "/forms/\(p.v.versionId)/form.xml")] {
            let r = try p.f.client.request(method, base + path, headers: CollectClient.headers)
            #expect(r.status == 403, "\(method) \(path): \(r.status)")
            #expect(r.header("surveyd-error-code") == "1006", "\(method) \(path)")
            if method != "HEAD" { #expect(OpenRosaTests.message(r).contains("app token"), "\(method) \(path): \(r.text)") }
        }
    }
}
