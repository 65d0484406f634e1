import Foundation
import FoundationXML
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// A version published with the files its form names (`multipart/form-data`), on a real server:
/// the XLSForm of `make_attachments.py` — villages from a CSV file filtered by district, crops
/// from another, a population looked up with pulldata() and a constraint over it, an image in a
/// label. Its answers are checked against the files; every missing or extra file refuses the
/// version with nothing published; the files read back byte for byte through the API and an
/// ODK app's manifest; hostile CSV files are refused in bounded time.
@Suite struct FormAttachmentTests {
    typealias P = FoundationTests

    // The files the form names, as make_attachments.py writes them.
    static let villages = (try? FormPublishingTests.bytes("villages.csv")) ?? []
    static let crops = (try? FormPublishingTests.bytes("crops.csv")) ?? []
    static let map = (try? FormPublishingTests.bytes("map.png")) ?? []

    struct Part {
        let field: String
        let fileName: String?
        let contentType: String
        let bytes: [UInt8]
    }

    static func form(_ bytes: [UInt8] = xlsx) -> Part {
        Part(field: "form", fileName: "village_visit.xlsx", contentType: "application/octet-stream", bytes: bytes)
    }
    static func file(_ name: String, _ bytes: [UInt8], type: String = "application/octet-stream") -> Part {
        Part(field: name, fileName: name, contentType: type, bytes: bytes)
    }
    static var allFiles: [Part] { [file("villages.csv", villages, type: "text/csv"), file("crops.csv", crops), file("map.png", map, type: "image/png")] }
    static let xlsx = (try? FormPublishingTests.bytes("village_visit.xlsx")) ?? []

    static func multipart(_ parts: [Part]) -> ([UInt8], String) {
        let boundary = "----surveyd" + String(UUID().uuidString.prefix(12))
        var body: [UInt8] = []
        for p in parts {
            var disposition = "form-data; name=\"\(p.field)\""
            if let f = p.fileName { disposition += "; filename=\"\(f)\"" }
            body += Array("--\(boundary)\r\nContent-Disposition: \(disposition)\r\nContent-Type: \(p.contentType)\r\n\r\n".utf8) + p.bytes + Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    func survey(_ f: Fixture) throws -> String {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Village visit"])
        return try #require(s.json?["surveyId"]?.stringValue)
    }

    func publish(_ f: Fixture, _ surveyId: String, _ parts: [Part], headers: [String: String] = [:]) throws -> Reply {
        let (body, contentType) = Self.multipart(parts)
        return try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                                    headers: headers.merging(["Content-Type": contentType]) { a, _ in a })
    }

    /// What a refused publication must not leave: a version, an attachment row, a blob, an audit entry.
    func stored(_ f: Fixture) throws -> [Int64] {
        [try f.server.count("SELECT COUNT(*) AS n FROM survey_versions"), try f.server.count("SELECT COUNT(*) AS n FROM survey_version_attachments"),
         Int64(f.server.files(in: "blobs").count), try f.server.count("SELECT COUNT(*) AS n FROM audit")]
    }

    func submit(_ f: Fixture, _ version: String, _ hash: String, _ id: String, _ answers: JSONValue) throws -> Reply {
        try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                          ["clientSubmissionId": .string(id), "surveyVersionId": .string(version), "contentHash": .string(hash), "answers": answers])
    }

    @Test func aFormPublishedWithItsFilesChecksAnswersAgainstThem() throws {
        let f = try Fixture()
        let id = try survey(f)
        let r = try publish(f, id, [Self.form()] + Self.allFiles)
        #expect(r.status == 201, "\(r.text)")
        let version = try #require(r.json?["surveyVersionId"]?.stringValue)
        let hash = try #require(r.json?["contentHash"]?.stringValue)
        // The version document lists the files by name, each with its type, size and digests.
        let listed = r.json?["attachments"]?.arrayValue ?? []
        #expect(listed.compactMap { $0["fileName"]?.stringValue } == ["crops.csv", "map.png", "villages.csv"])
        for (name, bytes, type) in [("crops.csv", Self.crops, "text/csv"), ("map.png", Self.map, "image/png"), ("villages.csv", Self.villages, "text/csv")] {
            let a = try #require(listed.first { $0["fileName"]?.stringValue == name })
            #expect(a["contentType"]?.stringValue == type)
            #expect(a["size"]?.intValue == bytes.count)
            #expect(a["sha256"]?.stringValue == Digest.sha256Hex(bytes))
            #expect(a["md5"]?.stringValue == Digest.md5Hex(bytes))
            // Read back byte for byte by any member, with its type, never sniffed.
            let back = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/attachments/\(name)", token: f.collectorToken)
            #expect(back.status == 200)
            #expect(back.body == bytes, "\(name)")
            #expect(back.header("content-type") == type)
            #expect(back.header("x-content-type-options") == "nosniff")
        }
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/attachments/other.csv", token: f.collectorToken).status == 404)
        // The GET of the version says the same; its definition holds the files' choices.
        try ODKValidate.accept(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/xform", token: f.collectorToken).body,
                               label: "village_visit.xlsx converted by pyxform")
        let got = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)", token: f.collectorToken)
        #expect(got.json?["attachments"] == r.json?["attachments"])
        let definition = try #require(got.json?["definition"])
        #expect(definition["choiceLists"]?["villages.csv"]?.arrayValue?.count == 4)
        #expect(definition["choiceLists"]?["villages.csv"]?[1]?["label"]?.stringValue == "Lower Valley, by the river")
        #expect(definition["choiceLists"]?["villages.csv"]?[3]?["label"]?.stringValue == "Long\nName")
        #expect(definition["choiceLists"]?["crops.csv"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["maize", "beans", "cassava"])
        #expect(definition["questions"]?[3]?["media"]?["image"]?.stringValue == "map.png")

        let good: JSONValue = ["district": "north", "village": "v2", "population": "40", "households": 12, "crops": ["maize", "beans"]]
        #expect(try submit(f, version, hash, "visit-0001", good).status == 201)
        let before = try f.server.count("SELECT COUNT(*) AS n FROM responses")
        // A village the file does not have, one of another district, more households than the
        // file's population, a crop the file does not have: each refused at its path, nothing stored.
        // (A village the file lacks has no population either: pulldata finds "", as in ODK Collect,
        // and the constraint over it is false.)
        let cases: [(JSONValue, [FieldError])] = [
            (["district": "north", "village": "v9", "households": 1],
             [FieldError(path: "answers.village", message: "\"v9\" is not one of the choices"),
              FieldError(path: "answers.households", message: "No more households than people")]),
            (["district": "north", "village": "v3", "households": 1],
             [FieldError(path: "answers.village", message: "\"v3\" is not offered here (its choice filter is false)")]),
            (["district": "north", "village": "v2", "households": 41], [FieldError(path: "answers.households", message: "No more households than people")]),
            (["district": "south", "village": "v4", "households": 1, "crops": ["maize", "rice"]],
             [FieldError(path: "answers.crops", message: "\"rice\" is not one of the choices")]),
        ]
        for (i, (answers, expected)) in cases.enumerated() {
            let refused = try submit(f, version, hash, "visit-bad-\(i)", answers)
            P.expectProblem(refused, .validationFailed)
            let errors = (refused.json?["errors"]?.arrayValue ?? []).map {
                FieldError(path: $0["path"]?.stringValue ?? "", message: $0["message"]?.stringValue ?? "")
            }
            #expect(errors == expected, "\(refused.text)")
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == before)
        // The same village at the file's population is accepted.
        #expect(try submit(f, version, hash, "visit-0002", ["district": "south", "village": "v3", "households": 300]).status == 201)
    }

    /// A JSON definition names its files the same way: a list named after a CSV file, pulldata,
    /// media; sent as the part `form` with the files beside it.
    static let visitDefinition: JSONValue = [
        "title": "Village visit",
        "questions": [
            ["id": "village", "type": "select_one", "label": "Village", "choiceList": "villages.csv", "media": ["image": "map.png"]],
            ["id": "households", "type": "integer", "label": "Households",
             "constraint": ". <= pulldata('villages', 'population', 'name', ${village})"],
        ],
    ]

    @Test func aJSONDefinitionIsPublishedWithItsFilesToo() throws {
        let f = try Fixture()
        let id = try survey(f)
        let definition: JSONValue = ["definition": Self.visitDefinition]
        let form = Part(field: "form", fileName: "visit.json", contentType: "application/json", bytes: CanonicalJSON.encode(definition))
        let r = try publish(f, id, [form, Self.file("villages.csv", Self.villages), Self.file("map.png", Self.map)])
        #expect(r.status == 201, "\(r.text)")
        #expect(r.json?["source"]?["format"]?.stringValue == "json")
        #expect(r.json?["attachments"]?.arrayValue?.count == 2)
        let version = try #require(r.json?["surveyVersionId"]?.stringValue), hash = try #require(r.json?["contentHash"]?.stringValue)
        #expect(try submit(f, version, hash, "json-visit-0001", ["village": "v3", "households": 300]).status == 201)
        P.expectProblem(try submit(f, version, hash, "json-visit-0002", ["village": "v3", "households": 301]), .validationFailed)
        // Without the image the same definition is refused, naming it.
        let missing = try publish(f, id, [form, Self.file("villages.csv", Self.villages)])
        #expect(missing.json?["errors"]?[0]?["message"]?.stringValue == "the form names map.png (at definition.questions[0].media.image), which was not sent")
        // Its XForm is written on request, as for every JSON definition: the CSV files as
        // instances the app fills from them, the image in the label's itext. Published with the
        // same files, it is the same version content.
        let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/xform", token: f.collectorToken)
        #expect(xform.status == 200)
        #expect(xform.text.contains("<instance id=\"villages\" src=\"jr://file-csv/villages.csv\"/>"), "\(xform.text)")
        #expect(xform.text.contains("<value form=\"image\">jr://images/map.png</value>"), "\(xform.text)")
        try ODKValidate.accept(xform.body, label: "a JSON definition that names files, written as an XForm")
        let again = try publish(f, id, [Part(field: "form", fileName: "visit.xml", contentType: "application/xml", bytes: xform.body),
                                        Self.file("villages.csv", Self.villages), Self.file("map.png", Self.map)])
        #expect(again.json?["contentHash"]?.stringValue == hash, "\(again.text.prefix(400))")
    }

    @Test func everyMissingAndEveryExtraFileIsRefusedWithNothingPublished() throws {
        let f = try Fixture()
        let id = try survey(f)
        let before = try stored(f)
        for missing in Self.allFiles {
            let r = try publish(f, id, [Self.form()] + Self.allFiles.filter { $0.field != missing.field })
            P.expectProblem(r, .validationFailed)
            let error = r.json?["errors"]?.arrayValue?.first
            #expect(error?["path"]?.stringValue == "attachments.\(missing.field)", "\(r.text)")
            #expect(error?["message"]?.stringValue?.hasPrefix("the form names \(missing.field)") == true, "\(r.text)")
            #expect(error?["message"]?.stringValue?.hasSuffix("which was not sent") == true, "\(r.text)")
        }
        let extra = try publish(f, id, [Self.form()] + Self.allFiles + [Self.file("notes.txt", Array("hello".utf8))])
        P.expectProblem(extra, .validationFailed)
        #expect(extra.json?["errors"]?[0]?["path"]?.stringValue == "attachments.notes.txt")
        #expect(extra.json?["errors"]?[0]?["message"]?.stringValue == "notes.txt was sent, but the form names no such file")
        // Without files at all (the XLSForm as the body), every file is missing.
        let bare = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, body: Self.xlsx,
                                        headers: ["Content-Type": FormPublishingTests.xlsx])
        P.expectProblem(bare, .validationFailed)
        #expect(bare.json?["errors"]?.arrayValue?.count == 3, "\(bare.text)")
        // A part that is no file (a plain field, with or without a name): refused at that part.
        for field in ["crops.csv", ""] {
            let plain = try publish(f, id, [Self.form()] + Self.allFiles + [Part(field: field, fileName: nil, contentType: "text/plain", bytes: Array("x".utf8))])
            P.expectProblem(plain, .validationFailed)
            #expect(plain.json?["errors"]?[0]?["path"]?.stringValue == "attachments.\(field)", "\(plain.text)")
            #expect(plain.json?["errors"]?[0]?["message"]?.stringValue?.contains("was sent as a plain field, not a file") == true, "\(plain.text)")
        }
        // A file sent twice, and a file whose bytes are not what its name says.
        P.expectProblem(try publish(f, id, [Self.form()] + Self.allFiles + [Self.file("map.png", Self.map)]), .validationFailed)
        let fake = try publish(f, id, [Self.form()] + Self.allFiles.filter { $0.field != "map.png" } + [Self.file("map.png", Array("not a png".utf8))])
        P.expectProblem(fake, .corruptFile)
        #expect(try stored(f) == before)
        #expect(f.server.files(in: "tmp").isEmpty)
    }

    /// A caller the route refuses is answered before a byte of the form is taken.
    @Test func aCallerWhoMayNotPublishIsRefusedBeforeTheFilesArrive() throws {
        let f = try Fixture()
        let id = try survey(f)
        let (body, contentType) = Self.multipart([Self.form()] + Self.allFiles)
        let path = "/v1/orgs/\(f.orgId)/surveys/\(id)/versions"
        let nobody = try f.client.request("POST", path, token: "not-a-token", body: body, headers: ["Content-Type": contentType])
        P.expectProblem(nobody, .unauthenticated)
        let collector = try f.client.request("POST", path, token: f.collectorToken, body: body, headers: ["Content-Type": contentType])
        P.expectProblem(collector, .forbidden)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") == 0)
    }

    @Test func anExpiredSubscriptionRefusesThePublicationAndItsFiles() throws {
        let f = try Fixture()
        let id = try survey(f)
        try f.expire()
        let before = try stored(f)
        P.expectProblem(try publish(f, id, [Self.form()] + Self.allFiles), .subscriptionExpired)
        #expect(try stored(f) == before)
        try f.renew()
        let r = try publish(f, id, [Self.form()] + Self.allFiles, headers: ["Idempotency-Key": "publish-village-visit"])
        #expect(r.status == 201, "\(r.text)")
        // The identical request again is its replay; another form under the same key is a conflict.
        let again = try publish(f, id, [Self.form()] + Self.allFiles, headers: ["Idempotency-Key": "publish-village-visit"])
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true")
        #expect(again.json?["surveyVersionId"] == r.json?["surveyVersionId"])
        let other = try publish(f, id, [Self.form()] + Self.allFiles.filter { $0.field != "map.png" } + [Self.file("map.png", Files.png(4096))],
                                headers: ["Idempotency-Key": "publish-village-visit"])
        P.expectProblem(other, .idempotencyConflict)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") == 1)
    }

    /// A publish with an Idempotency-Key answers from what it wrote, as one without: its files
    /// are in its answer, its replay and the form list an app reads (else Collect never fetches
    /// the CSV and the form cannot be filled).
    @Test func aKeyedPublishAnswersWithTheFilesItPublished() throws {
        let f = try Fixture()
        let id = try survey(f)
        let names = Set(Self.allFiles.map(\.field))
        let r = try publish(f, id, [Self.form()] + Self.allFiles, headers: ["Idempotency-Key": "publish-keyed-files"])
        #expect(r.status == 201, "\(r.text)")
        #expect(Set(r.json?["attachments"]?.arrayValue?.compactMap { $0["fileName"]?.stringValue } ?? []) == names, "\(r.text)")
        let again = try publish(f, id, [Self.form()] + Self.allFiles, headers: ["Idempotency-Key": "publish-keyed-files"])
        #expect(again.header("idempotent-replayed") == "true")
        #expect(Set(again.json?["attachments"]?.arrayValue?.compactMap { $0["fileName"]?.stringValue } ?? []) == names, "\(again.text)")
        let versionId = try #require(r.json?["surveyVersionId"]?.stringValue)
        let read = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)", token: f.adminToken)
        #expect(Set(read.json?["attachments"]?.arrayValue?.compactMap { $0["fileName"]?.stringValue } ?? []) == names, "\(read.text)")
        let listed = try CollectClient(f).formList().reply
        #expect(listed.text.contains("<manifestUrl>"), "\(listed.text)")
    }

    @Test func anAppDownloadsTheFilesByItsManifestAndSubmitsThroughTheDoor() throws {
        let f = try Fixture()
        let id = try survey(f)
        let published = try publish(f, id, [Self.form()] + Self.allFiles)
        #expect(published.status == 201, "\(published.text)")
        let collect = CollectClient(f)
        let list = try collect.formList()
        let document = try XMLDocument(data: Data(list.reply.body))
        let manifestURL = try #require(document.rootElement()?.elements(forName: "xform").first?.elements(forName: "manifestUrl").first?.stringValue)
        let manifest = try f.client.request("GET", try #require(URL(string: manifestURL)).path, headers: CollectClient.headers)
        #expect(manifest.status == 200 && manifest.header("x-openrosa-version") == "1.0")
        let files = try XMLDocument(data: Data(manifest.body)).rootElement()?.elements(forName: "mediaFile") ?? []
        var seen: [String] = []
        for file in files {
            let name = try #require(file.elements(forName: "filename").first?.stringValue)
            let hash = try #require(file.elements(forName: "hash").first?.stringValue)
            let url = try #require(file.elements(forName: "downloadUrl").first?.stringValue)
            let bytes = try f.client.request("GET", try #require(URL(string: url)).path, headers: CollectClient.headers)
            #expect(bytes.status == 200)
            #expect(hash == "md5:" + Digest.md5Hex(bytes.body), "\(name)")
            #expect(bytes.body == Self.allFiles.first { $0.field == name }?.bytes, "\(name)")
            seen.append(name)
        }
        #expect(seen.sorted() == ["crops.csv", "map.png", "villages.csv"])
        // Another app's token cannot read them.
        let stranger = URL(string: manifestURL)?.path.replacingOccurrences(of: f.collectorToken, with: "not-a-token") ?? ""
        #expect(try f.client.request("GET", stranger, headers: CollectClient.headers).status == 403)

        // A filled-in form as Collect writes it, accepted; one naming a village the file lacks, refused.
        let form = try #require(list.forms.first)
        let xform = try collect.download(form).body
        let good = try CollectClient.instance(of: xform, instanceID: "uuid:7b0c4c5e-1111-4a4a-9c9c-000000000001",
                                              values: [("district", "south"), ("village", "v4"), ("population", "8"), ("households", "3"),
                                                       ("crops", "maize cassava")])
        let accepted = try collect.submit(good)
        #expect(accepted.status == 201, "\(accepted.text)")
        let bad = try CollectClient.instance(of: xform, instanceID: "uuid:7b0c4c5e-1111-4a4a-9c9c-000000000002",
                                             values: [("district", "south"), ("village", "v1"), ("households", "3")])
        let refused = try collect.submit(bad)
        #expect(refused.status == 422, "\(refused.text)")
        #expect(refused.text.contains("village: &quot;v1&quot; is not offered here (its choice filter is false)"), "\(refused.text)")
    }

    /// A list of 50,000 villages publishes in under 2 s, and an answer is checked against it at
    /// once: the list is read into the definition once and indexed by name.
    @Test func aFiftyThousandRowListPublishesAndChecksAtOnce() throws {
        let f = try Fixture()
        let id = try survey(f)
        var csv = "name,label,district,population\n"
        for i in 0..<50_000 { csv += "v\(i),Village \(i),\(i % 2 == 0 ? "north" : "south"),\(100 + i % 900)\n" }
        let clock = ContinuousClock()
        var r: Reply?
        let elapsed = try clock.measure {
            r = try publish(f, id, [Self.form(), Self.file("villages.csv", Array(csv.utf8)), Self.file("crops.csv", Self.crops), Self.file("map.png", Self.map)])
        }
        let published = try #require(r)
        #expect(published.status == 201, "\(published.text.prefix(500))")
        // 2 s is the product's bound; a debug build runs the same code several times slower (1.4 s
        // measured alone, 7 s beside the other tests and ODK Validate on two shared cores), so
        // it gets a hang guard instead.
        #if DEBUG
        #expect(elapsed < .seconds(30), "\(elapsed)")
        #else
        #expect(elapsed < .seconds(2), "\(elapsed)")
        #endif
        let version = try #require(published.json?["surveyVersionId"]?.stringValue), hash = try #require(published.json?["contentHash"]?.stringValue)
        #expect(try submit(f, version, hash, "visit-big-0001", ["district": "south", "village": "v49999", "households": 10]).status == 201)
        for i in 0..<20 {
            let refused = try submit(f, version, hash, "visit-big-bad-\(i)", ["district": "south", "village": .string("v5000\(i)"), "households": 1])
            #expect(refused.status == 422)
        }
    }

    /// `surveyd check` proves each attachment's blob, and a backup carries them: the restored
    /// data dir passes the check and serves the same bytes.
    @Test func theFilesArePartOfTheCheckAndOfABackup() throws {
        let f = try Fixture()
        let id = try survey(f)
        let published = try publish(f, id, [Self.form()] + Self.allFiles)
        let version = try #require(published.json?["surveyVersionId"]?.stringValue)
        #expect(try TestEngine.check(dataDir: f.server.dataDir).ok)
        let dest = NSTemporaryDirectory() + "surveyd-attachments-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dest) }
        let source = TestEngine.isPostgres ? try TestEngine.urlArguments(dataDir: f.server.dataDir) : ["--data-dir", f.server.dataDir]
        let backup = try ServerProcess.command(["backup"] + source + ["--to", dest], timeout: 120)
        #expect(backup.status == 0, "\(backup.stdout) \(backup.stderr)")
        #expect(backup.stdout.contains("3 blob file(s)"), "\(backup.stdout)")
        // The backup is a SQLite data dir, whichever engine it was made from.
        let report = try IntegrityCheck.run(dataDir: dest)
        #expect(report.ok, "\(report.violations)")
        #expect(report.counts.first { $0.0 == "blob files" }?.1 == 3)
        if !TestEngine.isPostgres {
            let restored = ServerProcess(dataDir: dest)
            try restored.start()
            let back = try restored.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/attachments/villages.csv", token: f.collectorToken)
            #expect(back.body == Self.villages)
            #expect(restored.terminate() == 0)
        }
    }

    /// `surveyd migrate` moves a SQLite data dir's attachments into PostgreSQL with their
    /// versions: the check passes there and the files read back byte for byte.
    @Test(.enabled(if: TestEngine.isPostgres, "needs the PostgreSQL test cluster"))
    func theFilesMoveWithAMigrationToPostgreSQL() throws {
        let f = try Fixture(server: try TestServer { $0.databaseURL = nil })
        let id = try survey(f)
        let published = try publish(f, id, [Self.form()] + Self.allFiles)
        let version = try #require(published.json?["surveyVersionId"]?.stringValue)
        f.server.stop()
        let pgDir = NSTemporaryDirectory() + "surveyd-attachments-migrated-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: pgDir) }
        let url = try #require(try TestEngine.database(for: pgDir))
        let migrated = try ServerProcess.command(["migrate", "--from-data-dir", f.server.dataDir, "--to-database-url", url], timeout: 120)
        #expect(migrated.status == 0 && migrated.stdout.contains("surveyd check: OK"), "\(migrated.stdout) \(migrated.stderr)")
        let pg = try TestServer(dataDir: pgDir)
        for (name, bytes) in [("villages.csv", Self.villages), ("crops.csv", Self.crops), ("map.png", Self.map)] {
            let back = try pg.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(version)/attachments/\(name)", token: f.collectorToken)
            #expect(back.status == 200 && back.body == bytes, "\(name)")
        }
    }

    /// Each refused (422 / 1002 at the file, saying why) in bounded time — the 20 s bound is a hang
    /// guard, not a benchmark (each takes well under a second alone; pyxform's conversion is most
    /// of it) — with the server answering afterwards and nothing published.
    @Test func hostileCSVFilesAreRefusedAndTheServerStaysUp() throws {
        let f = try Fixture(server: try TestServer { $0.maxFormBytes = 4 << 20 })
        let id = try survey(f)
        let before = try stored(f)
        let header = Array("name,label,district,population\n".utf8)
        var oversized = header
        while oversized.count <= 4 << 20 { oversized += Array("v\(oversized.count),Village,north,1\n".utf8) }
        let wide = Array(String(repeating: "c,", count: 1_000_000).utf8) + Array("\nv1,V\n".utf8)
        let cases: [(String, [UInt8], String)] = [
            ("over the size limit", oversized, "a CSV file a form reads is at most 4194304 bytes"),
            ("a million columns", wide, "line 1: the row has more than 1000 fields"),
            ("a quote never closed", header + Array("v1,\"Upper Valley,north,1\nv2,Lower,north,2\n".utf8), "line 2: a quoted field (field 2) is never closed"),
            ("a quote inside a field", header + Array("v1,Upper \"Valley\",north,1\n".utf8), "line 2: a quote inside an unquoted field"),
            ("not UTF-8", header + [0x76, 0x31, 0x2C, 0xC3, 0x28, 0x2C, 0x6E, 0x0A], "line 2: it is not UTF-8 text"),
        ]
        for (what, csv, message) in cases {
            let started = Date()
            let r = try publish(f, id, [Self.form(), Self.file("villages.csv", csv), Self.file("crops.csv", Self.crops), Self.file("map.png", Self.map)])
            #expect(Date().timeIntervalSince(started) < 20, "\(what)")
            P.expectProblem(r, .validationFailed)
            let error = r.json?["errors"]?.arrayValue?.first
            #expect(error?["path"]?.stringValue == "attachments.villages.csv", "\(what): \(r.text)")
            #expect(error?["message"]?.stringValue?.contains(message) == true, "\(what): \(r.text)")
        }
        #expect(try f.client.get("/healthz").status == 200)
        #expect(try stored(f) == before)
    }

    /// A 100 MB CSV file — under the request's limit (100 MiB in all), ten times a CSV file's —
    /// sent to a real surveyd process with its default limits: streamed to disk, refused by its
    /// size before a byte of it is read into memory, the process's peak memory barely moved.
    @Test func aHundredMegabyteCSVIsRefusedWithoutBeingRead() throws {
        let server = ServerProcess()
        try server.start()
        defer { _ = server.terminate() }
        let seed = try server.seed()
        let s = try server.client.post("/v1/orgs/\(seed.orgId)/surveys", token: seed.adminToken, ["title": "Village visit"])
        let id = try #require(s.json?["surveyId"]?.stringValue)
        var csv = Array("name,label,district,population\n".utf8)
        csv.reserveCapacity(100_000_000)
        let row = Array("v,Village,north,1\n".utf8)
        while csv.count + row.count <= 100_000_000 { csv += row }
        let (body, contentType) = Self.multipart([Self.form(), Self.file("villages.csv", csv), Self.file("crops.csv", Self.crops), Self.file("map.png", Self.map)])
        let before = server.memoryKB("VmHWM")
        let started = Date()
        let r = try server.client.request("POST", "/v1/orgs/\(seed.orgId)/surveys/\(id)/versions", token: seed.adminToken, body: body,
                                          headers: ["Content-Type": contentType])
        let peak = server.memoryKB("VmHWM")
        print("a 100 MB CSV refused in \(Date().timeIntervalSince(started)) s; server peak RSS \(before) → \(peak) kB")
        P.expectProblem(r, .validationFailed)
        #expect(r.json?["errors"]?[0]?["path"]?.stringValue == "attachments.villages.csv", "\(r.text)")
        #expect(r.json?["errors"]?[0]?["message"]?.stringValue?.contains("a CSV file a form reads is at most") == true, "\(r.text)")
        #expect(before > 0 && Double(peak - before) / 1024 < 32, "peak \(peak) kB, before \(before) kB")
        #expect(try server.client.get("/healthz").status == 200)
        let survey = try server.client.get("/v1/orgs/\(seed.orgId)/surveys/\(id)", token: seed.adminToken)
        #expect(survey.json?["versions"]?.arrayValue?.isEmpty == true, "\(survey.text)")
    }
}

private extension JSONValue {
    subscript(index: Int) -> JSONValue? { arrayValue.flatMap { $0.indices.contains(index) ? $0[index] : nil } }
}
