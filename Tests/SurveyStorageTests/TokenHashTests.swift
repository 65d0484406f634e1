import Testing
import SurveyDomain

@Suite struct TokenHashTests {
    @Test func sha256KnownAnswers() {
        #expect(Digest.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func constantTimeComparison() {
        let a = Digest.sha256(Array("token-a".utf8))
        let b = Digest.sha256(Array("token-b".utf8))
        #expect(Digest.constantTimeEqual(a, a))
        #expect(!Digest.constantTimeEqual(a, b))
        #expect(!Digest.constantTimeEqual(a, Array(a.prefix(31))))
        var flipped = a; flipped[31] ^= 1
        #expect(!Digest.constantTimeEqual(a, flipped))
    }

    @Test func randomBytesAreRandomAndLongEnough() {
        let x = Digest.randomBytes(32), y = Digest.randomBytes(32)
        #expect(x.count == 32)
        #expect(x != y)
        #expect(Set(x).count > 8)
    }

    @Test func base64RoundTrips() {
        for n in 0..<40 {
            let bytes = Digest.randomBytes(n)
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
            #expect(Base64.decode(Base64.encode(bytes, url: true)) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
    }
}
