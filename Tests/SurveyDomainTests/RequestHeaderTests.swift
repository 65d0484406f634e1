import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// The header and query values the routes read, as they read them (the fuzz harnesses in Fuzz/
/// check the same functions on arbitrary input).
@Suite struct RequestHeaderTests {
    private static let sha = Digest.sha256(Array("hello".utf8))

    @Test func contentDigest() throws {
        #expect(try ContentDigest.sha256(fromHeader: "sha-256=:\(Base64.encode(Self.sha)):") == Self.sha)
        #expect(try ContentDigest.sha256(fromHeader: "md5=:AAAA:, SHA-256 = :\(Base64.encode(Self.sha)): ") == Self.sha)
        #expect(try ContentDigest.sha256(fromHeader: "md5=:AAAA:") == nil)
        for bad in ["sha-256=:AAAA:", "sha-256=\(Base64.encode(Self.sha))", "sha-256=:", "sha-256=::"] {
            #expect(throws: ApiError.self, "\(bad)") { try ContentDigest.sha256(fromHeader: bad) }
        }
    }

    @Test func uploadMetadata() throws {
        let header = "clientUploadId \(Base64.encode(Array("photo-0001".utf8))), flag,contentType \(Base64.encode(Array("image/jpeg".utf8)))"
        #expect(try UploadMetadata.parse(header) == ["clientUploadId": "photo-0001", "flag": "", "contentType": "image/jpeg"])
        #expect(try UploadMetadata.parse(nil) == [:])
        #expect(try UploadMetadata.parse(" , ,") == [:])
        #expect(throws: ApiError.self) { try UploadMetadata.parse("key not*base64") }
        #expect(throws: ApiError.self) { try UploadMetadata.parse("key \(Base64.encode([0xFF, 0xFE]))") }
    }

    /// A comma or a space that a combining mark joins into one Character still separates.
    @Test func uploadMetadataSeparatorsJoinedToMarks() throws {
        #expect(try UploadMetadata.parse("a\u{0602},b") == ["a\u{0602}": "", "b": ""])
        #expect(try UploadMetadata.parse("a,\u{0301}b") == ["a": "", "\u{0301}b": ""])
        #expect(throws: ApiError.self) { try UploadMetadata.parse("k \u{0301}") }  // a value, not base64
    }

    @Test func uploadChecksum() throws {
        let c = try ChunkChecksum(header: "SHA256 \(Base64.encode(Self.sha))")
        #expect(c.algorithm == .sha256 && c.matches(Self.sha) && !c.matches(Self.sha + [0]))
        #expect(try ChunkChecksum(header: "sha1 AAAA").algorithm == .sha1)
        for bad in ["sha256", "md5 AAAA", "sha256 not*base64", ""] {
            #expect(throws: ApiError.self, "\(bad)") { try ChunkChecksum(header: bad) }
        }
    }

    @Test func tusNumbers() {
        #expect(TusHeader.uploadLength("3000") == 3000)
        #expect(TusHeader.uploadLength("0") == 0)
        #expect(TusHeader.uploadLength("-1") == nil)
        #expect(TusHeader.uploadLength("9223372036854775808") == nil)
        #expect(TusHeader.uploadLength(" 1") == nil)
        #expect(TusHeader.uploadLength(nil) == nil)
        #expect(TusHeader.uploadOffset("9223372036854775807") == Int64.max)
        #expect(TusHeader.uploadOffset("1e3") == nil)
        #expect(TusHeader.uploadOffset(nil) == nil)
    }

    @Test func pageQuery() throws {
        #expect(try PageQuery([:]) == PageQuery(["after": ""]))
        #expect(try PageQuery([:]).limit == 50)
        #expect(try PageQuery(["limit": "500", "after": "resp_1"]).limit == 500)
        #expect(try PageQuery(["limit": "1", "after": "resp_1"]).after == "resp_1")
        for bad in ["0", "501", "-1", "ten", "", "9223372036854775808"] {
            #expect(throws: ApiError.self, "\(bad)") { try PageQuery(["limit": bad]) }
        }
    }
}
