import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// AES-256-GCM boxes open only with their key, in their context, unchanged; no two are alike.
@Suite struct SealedBoxTests {
    let key = Digest.randomBytes(32)
    let message: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 42]

    @Test func aBoxOpensWithItsKeyAndContext() {
        let box = SealedBox.seal(message, key: key, context: Array("org a".utf8))
        #expect(box.count == message.count + SealedBox.overhead)
        #expect(SealedBox.open(box, key: key, context: Array("org a".utf8)) == message)
    }

    @Test func anotherKeyContextOrAChangedByteIsRefused() {
        let box = SealedBox.seal(message, key: key, context: Array("org a".utf8))
        #expect(SealedBox.open(box, key: Digest.randomBytes(32), context: Array("org a".utf8)) == nil)
        #expect(SealedBox.open(box, key: key, context: Array("org b".utf8)) == nil)
        for i in box.indices {
            var changed = box
            changed[i] ^= 1
            #expect(SealedBox.open(changed, key: key, context: Array("org a".utf8)) == nil, "byte \(i)")
        }
        #expect(SealedBox.open(Array(box.dropLast()), key: key, context: Array("org a".utf8)) == nil)
        #expect(SealedBox.open([], key: key, context: []) == nil)
    }

    @Test func theSameMessageSealsDifferentlyEachTime() {
        #expect(SealedBox.seal(message, key: key, context: []) != SealedBox.seal(message, key: key, context: []))
    }
}
