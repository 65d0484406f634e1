import Foundation
import FoundationXML
import Testing
import SurveyDomain
import TestProcesses
@testable import SurveyStorage

/// Entity sync as a field team lives it, over random interleavings (Docs/entities.md): two or
/// three phones download the households list, then, offline, register households and visit or
/// move them (their own and the ones they downloaded), each update carrying what ODK Collect
/// writes (`baseVersion`, `trunkVersion`, `branchId`, Entities 2024.1). Everything then reaches a
/// real `surveyd` through the OpenRosa door in a seeded random order — updates before their
/// create, a phone's second update before its first, two phones on one household — while the
/// server is killed (-9) mid-delivery and restarted, and the subscription expires for a stretch.
/// What the server ends with is compared with what the contract's rules imply, computed here on
/// their own (`Oracle`), never with the server's code.
///
/// A failure names its seed; `SURVEYD_ENTITY_SYNC_SEED=<seed>` runs that seed alone,
/// `SURVEYD_ENTITY_SYNC_SEEDS=<n>` runs n seeds.
@Suite(.serialized) struct EntitySyncPropertyTests {
    // MARK: - Seeds

    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["SURVEYD_ENTITY_SYNC_SEED"].flatMap({ UInt64($0) }) { return [one] }
        let count = environment["SURVEYD_ENTITY_SYNC_SEEDS"].flatMap { Int($0) } ?? 30
        return (1...max(1, count)).map { 0x5EED_0000 + UInt64($0) }
    }

    /// SplitMix64: the same seed, the same scenario, on every machine.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        /// A version-4 UUID, as phones make entity ids, instanceIDs and branch ids.
        mutating func uuid() -> String {
            var b = (0..<16).map { _ in UInt8.random(in: 0...255, using: &self) }
            b[6] = (b[6] & 0x0F) | 0x40
            b[8] = (b[8] & 0x3F) | 0x80
            let hex = b.map { String(format: "%02x", $0) }.joined()
            let u = Array(hex)
            return [String(u[0..<8]), String(u[8..<12]), String(u[12..<16]), String(u[16..<20]), String(u[20..<32])].joined(separator: "-")
        }
    }

    // MARK: - What phones send

    /// One filled-in form, as a phone finalized it.
    struct Sent: CustomStringConvertible {
        enum Form { case registration, visit, move }
        let instanceID: String
        let phone: Int
        let form: Form
        let entityId: String
        /// Registration: head, members, village. Visit: members. Move: village.
        let answers: [String: String]
        /// An update's `meta/entity`: what the phone's copy of the list said when the form was filled in.
        let baseVersion: Int64?
        let trunkVersion: Int64?
        let branchId: String?

        var isCreate: Bool { form == .registration }
        /// The entity's label as the form computes it; a move's form has none (the entity keeps its own).
        var label: String? {
            switch form {
            case .registration: "Household of \(answers["head"] ?? "")"
            case .visit: "Household of \(answers["members"] ?? "") people"
            case .move: nil
            }
        }
        /// The properties the form saves to.
        var properties: [String: String] { answers }
        var description: String {
            let what = isCreate ? "register" : "\(form == .visit ? "visit" : "move") base \(baseVersion ?? 0) trunk \(trunkVersion.map { "\($0)" } ?? "-")"
            return "phone \(phone) \(what) \(entityId.prefix(8)) \(answers) [\(instanceID.suffix(12))]"
        }
    }

    /// A phone's copy of an entity: its version as the phone counts it, and its offline branch.
    struct LocalCopy {
        var version: Int64
        let trunk: Int64?
        let branch: String
    }

    static let heads = ["Ada", "Bo", "Cy", "Dee", "Eko", "Fay", "Gus", "Hana", "Ivo", "Jo", "Kim", "Lin"]
    static let villages = ["Kisii", "Nyeri", "Embu", "Meru", "Kitui", "Narok"]

    /// What the phones do offline, from the list each downloaded (`downloaded`: id → version):
    /// each registers households and visits or moves households it has, its own included.
    /// Phones 0 and 1 both change the first downloaded household, so every seed has a race.
    static func offlineWork(phones: Int, downloaded: [(String, Int64)], rng: inout SeededGenerator) -> [[Sent]] {
        (0..<phones).map { phone in
            var local: [String: LocalCopy] = [:]
            // Collect's copy of a downloaded entity: its branch starts at the version downloaded.
            for (id, version) in downloaded { local[id] = LocalCopy(version: version, trunk: version, branch: rng.uuid()) }
            var own: [String] = []
            var work: [Sent] = []
            func update(_ id: String) {
                guard var copy = local[id] else { return }
                let visit = Bool.random(using: &rng)
                let answers = visit ? ["members": String(Int.random(in: 1...9, using: &rng))]
                                    : ["village": Self.villages.randomElement(using: &rng)!]
                work.append(Sent(instanceID: "uuid:" + rng.uuid(), phone: phone, form: visit ? .visit : .move, entityId: id, answers: answers,
                                 baseVersion: copy.version, trunkVersion: copy.trunk, branchId: copy.branch))
                copy.version += 1
                local[id] = copy
            }
            func register() {
                let id = rng.uuid()
                work.append(Sent(instanceID: "uuid:" + rng.uuid(), phone: phone, form: .registration, entityId: id,
                                 answers: ["head": Self.heads.randomElement(using: &rng)!, "members": String(Int.random(in: 1...9, using: &rng)),
                                           "village": Self.villages.randomElement(using: &rng)!],
                                 baseVersion: nil, trunkVersion: nil, branchId: nil))
                // Created on the phone: version 1, no trunk, a branch of its own.
                local[id] = LocalCopy(version: 1, trunk: nil, branch: rng.uuid())
                own.append(id)
            }
            register()
            if phone < 2, let first = downloaded.first { update(first.0) }
            for _ in 0..<Int.random(in: 3...5, using: &rng) {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<2: register()
                case 2..<6: if let id = own.randomElement(using: &rng) { update(id) }
                default: if let pick = downloaded.randomElement(using: &rng) { update(pick.0) }
                }
            }
            return work
        }
    }

    // MARK: - The rules, written again from the contract

    /// What the server must end with, from the order in which submissions reached it
    /// (CONTRACT Part 4 "Entity lists", "Conflicts"; Docs/entities.md "Late updates", "Offline,
    /// out of order"). A create makes version 1 (of an entity that exists: nothing). An update
    /// applies when its entity exists and, in a branch, its predecessor (the update whose
    /// `baseVersion` is one less) has applied; else it waits, and applies as soon as it can —
    /// the ones waiting in the order they arrived. Its base is the version it names, or in a
    /// branch past the trunk the version its predecessor made. From an older base than the
    /// current version it still applies, and marks what it changes (its values that differ
    /// from its base's) against what changed since its base (base against now): any in both
    /// `hard`, else `soft`; the entity's mark only rises.
    struct Oracle {
        struct Version: Equatable {
            let label: String
            let properties: [String: String]
            let instanceID: String
            let mark: String?
        }
        struct Entity {
            var versions: [Version]
            var conflict: String?
        }
        var entities: [String: Entity] = [:]
        /// The version each branch's update made, by the `baseVersion` it was sent with.
        var made: [String: Int] = [:]
        var waiting: [Sent] = []

        mutating func receive(_ s: Sent) {
            if s.isCreate {
                guard entities[s.entityId] == nil else { return }
                entities[s.entityId] = Entity(versions: [Version(label: s.label ?? s.entityId, properties: s.properties, instanceID: s.instanceID, mark: nil)],
                                              conflict: nil)
            } else if !apply(s) {
                waiting.append(s)
                return
            }
            var i = 0
            while i < waiting.count {
                if waiting[i].entityId == s.entityId, apply(waiting[i]) { waiting.remove(at: i); i = 0 } else { i += 1 }
            }
        }

        private static func key(_ entity: String, _ branch: String, _ base: Int64) -> String { "\(entity) \(branch) \(base)" }

        private static func rank(_ mark: String?) -> Int { mark == "hard" ? 2 : mark == "soft" ? 1 : 0 }

        /// False: it waits.
        private mutating func apply(_ u: Sent) -> Bool {
            guard var e = entities[u.entityId], let sent = u.baseVersion else { return false }
            var base = Int(sent)
            if let branch = u.branchId, sent > (u.trunkVersion ?? 1) {
                guard let predecessor = made[Self.key(u.entityId, branch, sent - 1)] else { return false }
                base = predecessor
            }
            let current = e.versions.count
            let now = e.versions[current - 1]
            var mark: String?
            if base != current {
                if base < current {
                    let then = e.versions[base - 1]
                    var changes = Set(u.properties.filter { then.properties[$0.key] != $0.value }.map { "properties." + $0.key })
                    if let label = u.label, label != then.label { changes.insert("label") }
                    var since = Set(Set(then.properties.keys).union(now.properties.keys).filter { then.properties[$0] != now.properties[$0] }
                        .map { "properties." + $0 })
                    if then.label != now.label { since.insert("label") }
                    mark = changes.isDisjoint(with: since) ? "soft" : "hard"
                } else {
                    mark = "soft"
                }
            }
            var properties = now.properties
            for (k, v) in u.properties { properties[k] = v }
            e.versions.append(Version(label: u.label ?? now.label, properties: properties, instanceID: u.instanceID, mark: mark))
            if Self.rank(mark) > Self.rank(e.conflict) { e.conflict = mark }
            entities[u.entityId] = e
            if let branch = u.branchId { made[Self.key(u.entityId, branch, sent)] = current + 1 }
            return true
        }
    }

    // MARK: - The field: a server process, an organization per team

    final class Field {
        let server = ServerProcess()
        let operatorToken: String
        /// The forms as pyxform 4.5.0 made them (`Tests/SurveyXFormTests/Fixtures/make_entity_forms.py`).
        static let forms = ["household_registration", "household_visit", "household_move"]

        init() throws {
            try server.start()
            operatorToken = try server.run(["admin", "create-operator"])
        }

        struct Team {
            let orgId: String
            let adminToken: String
            /// Each phone's collector token.
            let phones: [String]
            /// Form id → the XForm the phones downloaded.
            let xforms: [String: [UInt8]]
        }

        /// A new organization, its admin, a collector per phone, and the three forms published as XForms.
        func team(phones: Int, name: String) throws -> Team {
            let c = server.client
            let org = try c.post("/v1/orgs", token: operatorToken,
                                 ["name": .string(name), "expiresAt": .string(Timestamp.format(Timestamp.nowMillis() + 86_400_000))])
            let orgId = try #require(org.json?["orgId"]?.stringValue, "\(org.status) \(org.text)")
            let admin = try c.post("/v1/orgs/\(orgId)/users", token: operatorToken, ["name": "Admin", "roles": ["admin"]])
            let adminToken = try #require(admin.json?["token"]?.stringValue, "\(admin.text)")
            let tokens = try (0..<phones).map { i in
                let r = try c.post("/v1/orgs/\(orgId)/users", token: adminToken, ["name": .string("Phone \(i)"), "roles": ["collector"]])
                return try #require(r.json?["token"]?.stringValue, "\(r.text)")
            }
            var xforms: [String: [UInt8]] = [:]
            for form in Self.forms {
                let s = try c.post("/v1/orgs/\(orgId)/surveys", token: adminToken, ["title": .string(form)])
                let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
                let v = try c.request("POST", "/v1/orgs/\(orgId)/surveys/\(surveyId)/versions", token: adminToken,
                                      body: try FormPublishingTests.bytes(form + ".xml"), headers: ["Content-Type": "application/xml"])
                let versionId = try #require(v.json?["surveyVersionId"]?.stringValue, "\(form): \(v.status) \(v.text)")
                let xform = try c.get("/v1/orgs/\(orgId)/survey-versions/\(versionId)/xform", token: tokens[0])
                #expect(xform.status == 200)
                xforms[form] = xform.body
            }
            return Team(orgId: orgId, adminToken: adminToken, phones: tokens, xforms: xforms)
        }

        /// Phone `i` of `team`, talking to the server as it is now (its port changes on a restart).
        func collect(_ team: Team, _ i: Int) -> CollectClient {
            CollectClient(port: server.port, token: team.phones[i], orgId: team.orgId, deviceID: "collect:phone\(i)")
        }

        func setExpiry(_ team: Team, _ ms: Int64) throws {
            let r = try server.client.put("/v1/orgs/\(team.orgId)/subscription", token: operatorToken, ["expiresAt": .string(Timestamp.format(ms))])
            #expect(r.status == 200, "\(r.text)")
        }

        func rows(_ sql: String, _ args: [SQLValue]) throws -> [Row] { try TestEngine.Reader(dataDir: server.dataDir).query(sql, args) }
        func count(_ sql: String, _ args: [SQLValue]) throws -> Int64 { try rows(sql, args).first?.int("n") ?? -1 }

        /// `surveyd check` on the data dir, the server stopped.
        func stopAndCheck() throws -> (status: Int32, report: String) {
            _ = server.terminate()
            let outcome = try ServerProcess.command(["check", "--data-dir", server.dataDir] + TestEngine.urlArguments(dataDir: server.dataDir))
            return (outcome.status, outcome.stdout + outcome.stderr)
        }
    }

    /// The filled-in form `s` as Collect writes it: the form's primary instance with the answers,
    /// and `meta/entity` with what the phone's list said (and the label the form computed).
    static func instance(_ s: Sent, xforms: [String: [UInt8]]) throws -> [UInt8] {
        let values: [(String, String)]
        let form: String
        switch s.form {
        case .registration:
            form = "household_registration"
            values = [("head_name", s.answers["head"]!), ("member_count", s.answers["members"]!), ("village_name", s.answers["village"]!)]
        case .visit:
            form = "household_visit"
            values = [("household", s.entityId), ("members_now", s.answers["members"]!)]
        case .move:
            form = "household_move"
            values = [("household", s.entityId), ("village_now", s.answers["village"]!)]
        }
        let xml = try CollectClient.instance(of: try #require(xforms[form]), instanceID: s.instanceID, values: values)
        let document = try XMLDocument(data: Data(xml))
        let e = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
        var attributes = ["id": s.entityId]
        if let base = s.baseVersion { attributes["baseVersion"] = String(base) }
        if let trunk = s.trunkVersion { attributes["trunkVersion"] = String(trunk) }
        if let branch = s.branchId { attributes["branchId"] = branch }
        for (name, value) in attributes {
            e.removeAttribute(forName: name)
            e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
        }
        if let label = s.label {
            let element = try #require(e.elements(forName: "label").first)
            element.stringValue = label
        }
        return Array(document.xmlData)
    }

    /// The households list as a phone downloads it: its manifest entry (through the visit form)
    /// and the CSV's ids and versions.
    static func download(_ collect: CollectClient) throws -> (hash: String, versions: [(String, Int64)]) {
        let (hash, url) = try listEntry(collect, formID: "household_visit")
        let csv = try collect.http.request("GET", try #require(URL(string: url)).path, headers: CollectClient.headers)
        #expect(csv.status == 200)
        let lines = csv.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first?.hasPrefix("name,label,__version,__trunkVersion,__branchId,") == true)
        // Ids and versions hold no comma; labels here hold none either.
        let versions = lines.dropFirst().map { line -> (String, Int64) in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            return (String(fields[0]), Int64(fields[2]) ?? -1)
        }
        return (hash, versions)
    }

    /// A form's manifest entry for the households list: its hash and download URL.
    static func listEntry(_ collect: CollectClient, formID: String) throws -> (hash: String, url: String) {
        let form = try #require(try collect.formList().forms.first { $0.formID == formID }, "\(formID) is not listed")
        let manifest = try #require(form.manifestURL.flatMap(URL.init(string:)))
        let reply = try collect.http.request("GET", manifest.path, headers: CollectClient.headers)
        #expect(reply.status == 200)
        let files = try XMLDocument(data: Data(reply.body)).rootElement()?.elements(forName: "mediaFile") ?? []
        let file = try #require(files.first { $0.elements(forName: "filename").first?.stringValue == "households.csv" })
        #expect(file.attributes?.first { ($0.localName ?? $0.name) == "type" }?.stringValue == "entityList")
        func text(_ name: String) -> String { file.elements(forName: name).first?.stringValue ?? "" }
        return (text("hash"), text("downloadUrl"))
    }

    // MARK: - The property

    /// What the test found, across seeds: the interleavings the random orders made.
    struct Coverage {
        var updateBeforeCreate = 0
        var laterBeforeEarlier = 0
        var sameHouseholdRaces = 0
        var hard = 0
        var soft = 0
        var lostAnswers = 0
        /// Of those, stored before the kill (answered 202 when sent again) and not (201).
        var lostButStored = 0
        var lostAndNotStored = 0
        var refusedWhileExpired = 0
    }

    @Test func randomInterleavingsOfOfflineWorkEndAsThePhonesOrderImplies() throws {
        let field = try Field()
        var coverage = Coverage()
        for seed in Self.seeds {
            try Self.run(seed: seed, in: field, coverage: &coverage)
        }
        let (status, report) = try field.stopAndCheck()
        #expect(status == 0, "surveyd check: \(report)")
        print("EntitySyncPropertyTests: \(Self.seeds.count) seeds, \(coverage)")
        // The random orders made every case the property is about, somewhere.
        if Self.seeds.count >= 10 {
            #expect(coverage.updateBeforeCreate > 0 && coverage.laterBeforeEarlier > 0 && coverage.sameHouseholdRaces > 0, "\(coverage)")
            #expect(coverage.hard > 0 && coverage.soft > 0, "\(coverage)")
            #expect(coverage.refusedWhileExpired > 0 && coverage.lostAnswers > 0, "\(coverage)")
        }
    }

    /// One seed: a team, its phones' offline work, a delivery in a random order with a kill -9
    /// and an expired stretch, then the comparison with the oracle and a second full sync.
    static func run(seed: UInt64, in field: Field, coverage: inout Coverage) throws {
        var rng = SeededGenerator(state: seed)
        let phones = Int.random(in: 2...3, using: &rng)
        let team = try field.team(phones: phones, name: "Seed \(seed)")
        var failures = 0
        func check(_ ok: Bool, _ what: @autoclosure () -> String) {
            guard !ok else { return }
            failures += 1
            Issue.record("seed \(seed) (rerun alone: SURVEYD_ENTITY_SYNC_SEED=\(seed)): \(what())")
        }
        func send(_ s: Sent) -> Reply? {
            guard let xml = try? Self.instance(s, xforms: team.xforms) else { return nil }
            return try? field.collect(team, s.phone).submit(xml)
        }

        // Online first: households registered (one visited), so phones download versions 1 and 2.
        var oracle = Oracle()
        var online: [Sent] = []
        for _ in 0..<Int.random(in: 2...3, using: &rng) {
            online.append(Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: .registration, entityId: rng.uuid(),
                               answers: ["head": Self.heads.randomElement(using: &rng)!, "members": String(Int.random(in: 1...9, using: &rng)),
                                         "village": Self.villages.randomElement(using: &rng)!], baseVersion: nil, trunkVersion: nil, branchId: nil))
        }
        online.append(Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: .visit, entityId: online[0].entityId,
                           answers: ["members": String(Int.random(in: 1...9, using: &rng))], baseVersion: 1, trunkVersion: 1, branchId: rng.uuid()))
        for s in online {
            let r = send(s)
            check(r?.status == 201, "online \(s): \(r?.status ?? 0) \(r?.text ?? "")")
            oracle.receive(s)
        }
        var downloaded: [(String, Int64)] = []
        for i in 0..<phones {
            let list = try Self.download(field.collect(team, i))
            if i == 0 { downloaded = list.versions.shuffled(using: &rng) }
            check(list.versions.count == online.count - 1, "phone \(i) downloaded \(list.versions)")
        }
        for (id, version) in downloaded {
            check(oracle.entities[id]?.versions.count == Int(version), "the CSV says \(id) is at version \(version)")
        }

        // Offline, then every submission sent in a random order.
        let work = Self.offlineWork(phones: phones, downloaded: downloaded, rng: &rng)
        let order = work.flatMap { $0 }.shuffled(using: &rng)
        let expiredFrom = Int.random(in: 0..<order.count, using: &rng)
        let expiredCount = min(Int.random(in: 2...3, using: &rng), order.count - expiredFrom)
        let outside = (0..<order.count).filter { $0 < expiredFrom || $0 >= expiredFrom + expiredCount }
        let killAt = outside.randomElement(using: &rng) ?? 0
        // A submission takes a few milliseconds here: the kill lands before, during or after it.
        let killAfter = Double(Int.random(in: 0...32, using: &rng)) / 4000

        /// The order in which the server committed them: what the oracle reads.
        var arrived: [Sent] = []
        var lost: [Sent] = []
        var refused: [Sent] = []
        func delivered(_ s: Sent, _ r: Reply?, expired: Bool = false) {
            guard let r else { lost.append(s); return }
            if expired {
                check(r.status == 402 && r.header("surveyd-error-code") == "1001", "while expired \(s): \(r.status) \(r.text)")
                refused.append(s)
            } else if r.status == 201 {
                arrived.append(s)
            } else {
                check(false, "\(s): \(r.status) \(r.text)")
            }
        }
        for (index, s) in order.enumerated() {
            if index == expiredFrom {
                try field.setExpiry(team, Timestamp.nowMillis() - 60_000)
                // A replay is answered while expired, and changes nothing.
                if let stored = arrived.last ?? online.last {
                    let replay = send(stored)
                    check(replay?.status == 202, "replay of \(stored) while expired: \(replay?.status ?? 0)")
                }
            }
            let expired = index >= expiredFrom && index < expiredFrom + expiredCount
            if index == killAt {
                // kill -9 at a random moment of this submission: before, during or after its commit.
                let watchdog = try #require(field.server.process).killing(after: killAfter)
                let r = send(s)
                field.server.kill9()
                watchdog.cancel()
                delivered(s, r)
                try field.server.start()
                // Collect sends again what it got no answer for: stored already (202) or not (201).
                let unanswered = lost
                lost = []
                coverage.lostAnswers += unanswered.count
                for u in unanswered {
                    let again = send(u)
                    check(again?.status == 201 || again?.status == 202, "sent again after the restart \(u): \(again?.status ?? 0) \(again?.text ?? "")")
                    if again?.status == 201 || again?.status == 202 { arrived.append(u) }
                    if again?.status == 202 { coverage.lostButStored += 1 }
                    if again?.status == 201 { coverage.lostAndNotStored += 1 }
                }
            } else {
                delivered(s, send(s), expired: expired)
            }
            if index == expiredFrom + expiredCount - 1 { try field.setExpiry(team, Timestamp.nowMillis() + 86_400_000) }
        }
        check(lost.isEmpty, "answers never seen: \(lost)")
        // The refused ones, sent again by their phones once the subscription is renewed.
        coverage.refusedWhileExpired += refused.count
        for s in refused {
            let r = send(s)
            check(r?.status == 201, "after renewal \(s): \(r?.status ?? 0) \(r?.text ?? "")")
            arrived.append(s)
        }
        check(Set(arrived.map(\.instanceID)).count == arrived.count && arrived.count == order.count,
              "\(arrived.count) of \(order.count) arrived, some twice?")
        for s in arrived { oracle.receive(s) }
        check(oracle.waiting.isEmpty, "the oracle still has waiting updates: \(oracle.waiting)")

        // What the random order made.
        var position: [String: Int] = [:]
        for (i, s) in arrived.enumerated() { position[s.instanceID] = i }
        for s in arrived where !s.isCreate {
            if let create = arrived.first(where: { $0.isCreate && $0.entityId == s.entityId }), position[create.instanceID]! > position[s.instanceID]! {
                coverage.updateBeforeCreate += 1
            }
            if let earlier = arrived.first(where: { $0.branchId == s.branchId && $0.entityId == s.entityId && $0.baseVersion == s.baseVersion! - 1 }),
               position[earlier.instanceID]! > position[s.instanceID]! {
                coverage.laterBeforeEarlier += 1
            }
        }

        // The server's entities, against the oracle.
        let orgId = team.orgId
        let stored = try field.rows("SELECT entity_id, label, properties, version, conflict FROM entities WHERE org_id = ?", [.text(orgId)])
        var versions: [String: [Oracle.Version]] = [:]
        for row in try field.rows("""
            SELECT v.entity_id, v.label, v.properties, v.conflict, r.client_submission_id FROM entity_versions v
            LEFT JOIN responses r ON r.org_id = v.org_id AND r.response_id = v.response_id
            WHERE v.org_id = ? ORDER BY v.entity_id, v.version
            """, [.text(orgId)]) {
            versions[try row.string("entity_id"), default: []].append(Oracle.Version(
                label: try row.string("label"), properties: Self.properties(try row.string("properties")),
                instanceID: try row.optionalString("client_submission_id") ?? "?", mark: try row.optionalString("conflict")))
        }
        check(stored.count == oracle.entities.count, "\(stored.count) entities stored, \(oracle.entities.count) expected")
        let updaters = Dictionary(grouping: order.filter { !$0.isCreate }, by: \.entityId).mapValues { Set($0.map(\.phone)) }
        for row in stored {
            let id = try row.string("entity_id")
            guard let expected = oracle.entities[id] else { check(false, "an entity no phone made: \(id)"); continue }
            let now = try #require(expected.versions.last)
            let label = try row.string("label"), properties = Self.properties(try row.string("properties"))
            let version = try row.int("version"), conflict = try row.optionalString("conflict")
            check(label == now.label && properties == now.properties, "\(id): \(label) \(properties), expected \(now.label) \(now.properties)")
            check(version == Int64(expected.versions.count), "\(id): version \(version), expected \(expected.versions.count)")
            check(conflict == expected.conflict, "\(id): conflict \(conflict ?? "null"), expected \(expected.conflict ?? "null")")
            // Each version: the submission that made it and the mark it made, in the oracle's order.
            let made = versions[id] ?? []
            check(made == expected.versions, "\(id): versions \(made.map { "\($0.instanceID.suffix(6)) \($0.mark ?? "-")" }), expected \(expected.versions.map { "\($0.instanceID.suffix(6)) \($0.mark ?? "-")" })")
            // Independently of the oracle: a conflict exactly where two phones changed one household offline.
            let raced = (updaters[id]?.count ?? 0) >= 2
            check((conflict != nil) == raced, "\(id): conflict \(conflict ?? "null") but \(updaters[id]?.count ?? 0) phones changed it offline")
            if raced { coverage.sameHouseholdRaces += 1 }
            if conflict == "hard" { coverage.hard += 1 }
            if conflict == "soft" { coverage.soft += 1 }
            // And each phone's updates applied in the order the phone made them.
            for branch in Set(order.filter { $0.entityId == id && !$0.isCreate }.compactMap(\.branchId)) {
                let sent = order.filter { $0.branchId == branch && $0.entityId == id }.sorted { $0.baseVersion! < $1.baseVersion! }.map(\.instanceID)
                let applied = made.map(\.instanceID).filter { sent.contains($0) }
                check(applied == sent, "\(id): branch \(branch.prefix(8)) applied as \(applied), made as \(sent)")
            }
        }
        // Every response stored once, no update left waiting.
        let all = online + order
        let responses = try field.rows("SELECT client_submission_id FROM responses WHERE org_id = ?", [.text(orgId)]).map { try $0.string("client_submission_id") }
        check(responses.count == all.count && Set(responses) == Set(all.map(\.instanceID)), "\(responses.count) responses stored for \(all.count) sent")
        check(try field.count("SELECT COUNT(*) AS n FROM entity_waiting WHERE org_id = ?", [.text(orgId)]) == 0, "updates still waiting")

        // The same full sync again, from every phone: replays, and nothing changes.
        func snapshot() throws -> [String] {
            var lines: [String] = []
            for table in ["responses", "entity_versions", "entity_waiting", "audit"] {
                let n = try field.count("SELECT COUNT(*) AS n FROM \(table) WHERE org_id = ?", [.text(orgId)])
                lines.append("\(table) \(n)")
            }
            for row in try field.rows("SELECT entity_id, label, properties, version, conflict, updated_at FROM entities WHERE org_id = ? ORDER BY entity_id",
                                      [.text(orgId)]) {
                let id = try row.string("entity_id"), label = try row.string("label"), properties = try row.string("properties")
                let version = try row.int("version"), conflict = try row.optionalString("conflict") ?? "-", updated = try row.int("updated_at")
                lines.append("\(id) \(label) \(properties) \(version) \(conflict) \(updated)")
            }
            lines.append(try Self.download(field.collect(team, 0)).hash)
            return lines
        }
        let before = try snapshot()
        for s in all.shuffled(using: &rng) {
            let r = send(s)
            check(r?.status == 202, "sent again \(s): \(r?.status ?? 0)")
        }
        check(try snapshot() == before, "a second sync changed something")
        if failures > 0 {
            print("EntitySyncPropertyTests: seed \(seed) failed; delivered in this order:\n" + arrived.map { "  \($0)" }.joined(separator: "\n"))
        }
    }

    static func properties(_ text: String) -> [String: String] {
        ((try? JSONParser.parse(Array(text.utf8)))?.objectValue ?? [:]).compactMapValues(\.stringValue)
    }

    /// "Changed since its base version" compares the base version with the current one, as ODK
    /// Central does (Docs/entities.md): a village moved and moved back by one phone meanwhile is
    /// unchanged, so another phone's late move is a soft conflict; left moved, a hard one.
    @Test func aPropertyChangedAndChangedBackSinceTheBaseMakesNoHardConflict() throws {
        let field = try Field()
        for movedBack in [true, false] {
            let team = try field.team(phones: 2, name: movedBack ? "Moved back" : "Moved")
            var rng = SeededGenerator(state: movedBack ? 11 : 12)
            let id = rng.uuid()
            func move(_ phone: Int, _ village: String, base: Int64, branch: String) -> Sent {
                Sent(instanceID: "uuid:" + rng.uuid(), phone: phone, form: .move, entityId: id, answers: ["village": village],
                     baseVersion: base, trunkVersion: 1, branchId: branch)
            }
            let a = rng.uuid(), b = rng.uuid()
            let sent = [Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: .registration, entityId: id,
                             answers: ["head": "Ada", "members": "4", "village": "Kisii"], baseVersion: nil, trunkVersion: nil, branchId: nil),
                        move(0, "Nyeri", base: 1, branch: a), move(0, movedBack ? "Kisii" : "Meru", base: 2, branch: a),
                        move(1, "Embu", base: 1, branch: b)]
            for s in sent {
                let r = try field.collect(team, s.phone).submit(try Self.instance(s, xforms: team.xforms))
                #expect(r.status == 201, "\(s): \(r.text)")
            }
            let row = try #require(try field.rows("SELECT properties, version, conflict FROM entities WHERE org_id = ?", [.text(team.orgId)]).first)
            #expect(Self.properties(try row.string("properties"))["village"] == "Embu")
            #expect(try row.int("version") == 4)
            #expect(try row.optionalString("conflict") == (movedBack ? "soft" : "hard"))
        }
        let (status, report) = try field.stopAndCheck()
        #expect(status == 0, "surveyd check: \(report)")
    }

    // MARK: - The manifest hash

    /// The list's hash in the manifest phones read moves exactly with the submissions that change
    /// an entity: not on reads (nor a restart), a replay, a refusal (422, 402), a form that writes
    /// no entity, an update that waits, or a create of an entity that exists.
    @Test func theManifestHashMovesExactlyWithTheSubmissionsThatChangeAnEntity() throws {
        let field = try Field()
        let team = try field.team(phones: 1, name: "Hash")
        let c = field.server.client
        let simpleSurvey = try c.post("/v1/orgs/\(team.orgId)/surveys", token: team.adminToken, ["title": "simple"])
        let simpleId = try #require(simpleSurvey.json?["surveyId"]?.stringValue)
        let simpleVersion = try c.request("POST", "/v1/orgs/\(team.orgId)/surveys/\(simpleId)/versions",
                                          token: team.adminToken, body: try FormPublishingTests.bytes("simple.xml"), headers: ["Content-Type": "application/xml"])
        #expect(simpleVersion.status == 201, "\(simpleVersion.text)")
        let simpleXForm = try CollectClient.instance(of: try FormPublishingTests.bytes("simple.xml"), instanceID: "uuid:simple-0000-0001",
                                                     values: [("full_name", "Ada"), ("age", "40")])

        var rng = SeededGenerator(state: 7)
        let ada = rng.uuid(), bo = rng.uuid()
        func register(_ id: String, _ head: String) -> Sent {
            Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: .registration, entityId: id,
                 answers: ["head": head, "members": "4", "village": "Kisii"], baseVersion: nil, trunkVersion: nil, branchId: nil)
        }
        func update(_ form: Sent.Form, _ id: String, base: Int64, _ answers: [String: String]) -> Sent {
            Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: form, entityId: id, answers: answers, baseVersion: base, trunkVersion: base,
                 branchId: rng.uuid())
        }
        var seen: [String] = []
        func hash() throws -> String {
            let collect = field.collect(team, 0)
            let visit = try Self.listEntry(collect, formID: "household_visit").hash
            // Every form that reads the list names it with one hash.
            #expect(try Self.listEntry(collect, formID: "household_move").hash == visit)
            return visit
        }
        /// Sends `instance`, expects `status`, and checks the hash moved (to one never seen) or not.
        func step(_ what: String, _ instance: [UInt8], _ status: Int, changes: Bool) throws {
            let before = try hash()
            let r = try field.collect(team, 0).submit(instance)
            #expect(r.status == status, "\(what): \(r.status) \(r.text)")
            let after = try hash()
            #expect(try hash() == after, "\(what): a read moved the hash")
            if changes {
                #expect(after != before && !seen.contains(after), "\(what): the hash did not move to a new value")
            } else {
                #expect(after == before, "\(what): the hash moved")
            }
            seen.append(after)
        }
        func xml(_ s: Sent) throws -> [UInt8] { try Self.instance(s, xforms: team.xforms) }

        let empty = try hash()
        #expect(empty.hasPrefix("md5:") && empty.count == 36)
        seen.append(empty)
        let registerAda = try xml(register(ada, "Ada"))
        try step("a registration", registerAda, 201, changes: true)
        try step("its replay", registerAda, 202, changes: false)
        try step("a form that writes no entity", simpleXForm, 201, changes: false)
        let incomplete = try CollectClient.instance(of: try #require(team.xforms["household_visit"]), instanceID: "uuid:visit-missing-0001",
                                                    values: [("household", ada)])
        try step("a visit refused (a required answer missing)", incomplete, 422, changes: false)
        let visitAda = try xml(update(.visit, ada, base: 1, ["members": "5"]))
        try field.setExpiry(team, Timestamp.nowMillis() - 60_000)
        try step("a visit refused (the subscription expired)", visitAda, 402, changes: false)
        try field.setExpiry(team, Timestamp.nowMillis() + 86_400_000)
        // Bo was registered on this phone, offline: its branch has no trunk.
        let waits = try xml(Sent(instanceID: "uuid:" + rng.uuid(), phone: 0, form: .move, entityId: bo, answers: ["village": "Embu"],
                                 baseVersion: 1, trunkVersion: nil, branchId: rng.uuid()))
        try step("a move of a household whose registration has not arrived (it waits)", waits, 201, changes: false)
        try step("a registration of a household that exists", try xml(register(ada, "Ada again")), 201, changes: false)
        try step("the registration the move waited for (both apply)", try xml(register(bo, "Bo")), 201, changes: true)
        try step("the visit refused before, sent again", visitAda, 201, changes: true)
        try step("its replay", visitAda, 202, changes: false)
        let late = try xml(update(.move, ada, base: 1, ["village": "Meru"]))
        try step("another phone's move from version 1 (a soft conflict)", late, 201, changes: true)
        try step("its replay", late, 202, changes: false)

        // A restart changes nothing a phone sees.
        let last = try hash()
        field.server.kill9()
        try field.server.start()
        #expect(try hash() == last)
        #expect(try field.count("SELECT COUNT(*) AS n FROM entities WHERE org_id = ? AND conflict = 'soft'", [.text(team.orgId)]) == 1)
        let (status, report) = try field.stopAndCheck()
        #expect(status == 0, "surveyd check: \(report)")
    }
}

extension CollectClient {
    /// A phone of `orgId`'s collector `token`, on the server at `port`.
    init(port: UInt16, token: String, orgId: String, deviceID: String) {
        http = RawHTTPClient(port: port)
        base = "/v1/key/\(token)/orgs/\(orgId)"
        self.deviceID = deviceID
    }
}
