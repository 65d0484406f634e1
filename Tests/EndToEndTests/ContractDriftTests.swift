import Foundation
import Testing
import SurveyDomain

/// The error table exists three times: `ErrorCode` (the truth), `Docs/errors.md` (for people) and
/// the Problem schema of `Schemas/openapi.json` (for machines). These tests make them one table:
/// every code with its name, HTTP status and retryability in each, and nothing extra.
@Suite struct ContractDriftTests {
    struct Row: Hashable, CustomStringConvertible {
        let code: Int
        let name: String
        let httpStatus: Int
        let retryable: Bool
        var description: String { "\(code) \(name) \(httpStatus) retryable=\(retryable)" }
    }

    static let truth: [Row] = ErrorCode.allCases.map {
        Row(code: $0.rawValue, name: $0.name, httpStatus: $0.httpStatus, retryable: $0.retryable)
    }

    /// The package root, found from this file's path (Tests/EndToEndTests/ContractDriftTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    static func json(_ relative: String) throws -> JSONValue {
        try JSONParser.parse(Array(try text(relative).utf8))
    }

    /// `| 1001 | SubscriptionExpired | 402 | true | when … |` rows of Docs/errors.md (backticks allowed).
    static func docsRows() throws -> [Row] {
        var rows: [Row] = []
        for line in try text("Docs/errors.md").split(separator: "\n") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
            // A table row: "" | code | name | http | retryable | ... | ""
            guard cells.count >= 6, cells.first == "", let code = Int(cells[1]), (1000...1999).contains(code) else { continue }
            let retry = cells[4].lowercased()
            #expect(retry == "true" || retry == "false", "Docs/errors.md: retryable of \(code) is \(cells[4])")
            rows.append(Row(code: code, name: cells[2], httpStatus: Int(cells[3]) ?? -1, retryable: retry == "true"))
        }
        return rows
    }

    @Test func docsErrorTableMatchesErrorCode() throws {
        let rows = try Self.docsRows()
        #expect(!rows.isEmpty, "no error rows found in Docs/errors.md")
        let codes = rows.map(\.code)
        #expect(codes.count == Set(codes).count, "a code appears twice in Docs/errors.md: \(codes)")
        let missing = Set(Self.truth).subtracting(rows)
        let extra = Set(rows).subtracting(Self.truth)
        #expect(missing.isEmpty, "Docs/errors.md lacks or misstates: \(missing.sorted { $0.code < $1.code })")
        #expect(extra.isEmpty, "Docs/errors.md has rows ErrorCode does not: \(extra.sorted { $0.code < $1.code })")
        #expect(codes == codes.sorted(), "Docs/errors.md rows are not in code order")
    }

    /// The Problem schema that openapi.json's components point to.
    static func problemSchema() throws -> JSONValue {
        let openapi = try json("Schemas/openapi.json")
        let problem = try #require(openapi["components"]?["schemas"]?["Problem"], "openapi.json has no components.schemas.Problem")
        if let ref = problem["$ref"]?.stringValue {
            #expect(!ref.contains("#"), "Problem should reference a whole file, got \(ref)")
            return try json("Schemas/" + ref)
        }
        return problem
    }

    @Test func openAPIProblemSchemaMatchesErrorCode() throws {
        let problem = try Self.problemSchema()
        let codeEnum = try #require(problem["properties"]?["errorCode"]?["enum"]?.arrayValue).compactMap(\.intValue)
        let nameEnum = try #require(problem["properties"]?["errorName"]?["enum"]?.arrayValue).compactMap(\.stringValue)
        #expect(codeEnum == Self.truth.map(\.code), "errorCode enum \(codeEnum)")
        #expect(nameEnum == Self.truth.map(\.name), "errorName enum \(nameEnum)")

        // One oneOf branch per code binds the code to its name, retryability and HTTP status.
        let branches = try #require(problem["oneOf"]?.arrayValue, "the Problem schema has no oneOf table")
        var rows: [Row] = []
        for b in branches {
            let p = b["properties"]
            let code = try #require(p?["errorCode"]?["const"]?.intValue, "a branch without errorCode.const")
            let name = try #require(p?["errorName"]?["const"]?.stringValue, "branch \(code) without errorName.const")
            let retry = try #require(p?["retryable"]?["const"]?.boolValue as Bool?, "branch \(code) without retryable.const")
            let http = try #require(b["x-httpStatus"]?.intValue, "branch \(code) without x-httpStatus")
            let statuses = p?["status"]?["const"].flatMap(\.intValue).map { [$0] }
                ?? (p?["status"]?["enum"]?.arrayValue ?? []).compactMap(\.intValue)
            #expect(statuses.contains(http), "branch \(code): status \(statuses) does not allow its HTTP status \(http)")
            #expect(b["title"]?.stringValue == name, "branch \(code): title \(b["title"]?.stringValue ?? "-") is not \(name)")
            rows.append(Row(code: code, name: name, httpStatus: http, retryable: retry))
        }
        #expect(rows.count == Set(rows.map(\.code)).count, "a code has two branches")
        let missing = Set(Self.truth).subtracting(rows)
        let extra = Set(rows).subtracting(Self.truth)
        #expect(missing.isEmpty, "the Problem schema lacks or misstates: \(missing.sorted { $0.code < $1.code })")
        #expect(extra.isEmpty, "the Problem schema has codes ErrorCode does not: \(extra.sorted { $0.code < $1.code })")
    }

    /// Each operation's error responses list the codes they can carry; every one must be a real
    /// code answered with that status (its own, or one the protocol substitutes: 405, 410, 412, 460).
    @Test func openAPIOperationErrorCodesAreRealAndAnsweredWithTheirStatus() throws {
        let openapi = try Self.json("Schemas/openapi.json")
        var allowed: [Int: Set<Int>] = [:]
        for b in try #require(try Self.problemSchema()["oneOf"]?.arrayValue) {
            let p = b["properties"]
            guard let code = p?["errorCode"]?["const"]?.intValue else { continue }
            let statuses = p?["status"]?["const"].flatMap(\.intValue).map { [$0] }
                ?? (p?["status"]?["enum"]?.arrayValue ?? []).compactMap(\.intValue)
            allowed[code] = Set(statuses)
        }
        let paths = try #require(openapi["paths"]?.objectValue)
        var checked = 0
        for (path, item) in paths {
            for (method, op) in item.objectValue ?? [:] {
                for (status, response) in op["responses"]?.objectValue ?? [:] {
                    guard let s = Int(status), s >= 400 else { continue }
                    guard let schema = response["content"]?["application/problem+json"]?["schema"] else { continue }
                    let codes = (schema["allOf"]?.arrayValue ?? []).compactMap { $0["properties"]?["errorCode"]?["enum"]?.arrayValue }
                        .flatMap { $0 }.compactMap(\.intValue)
                    #expect(!codes.isEmpty, "\(method.uppercased()) \(path) \(status): no errorCode enum")
                    for code in codes {
                        #expect(allowed[code] != nil, "\(method.uppercased()) \(path) \(status): unknown errorCode \(code)")
                        #expect(allowed[code]?.contains(s) ?? false, "\(method.uppercased()) \(path): \(code) is never answered with \(status)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 0)
    }
}
