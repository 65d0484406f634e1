/// A cursor into the audit sequence, which every change advances in the change's own
/// transaction. That sequence is the whole server's, so the number is sealed (`SealedBox`, the
/// database's own key): read as a number, the gap between two of one organization's cursors
/// would count every other organization's writes meanwhile. `<prefix><base64url>`: a random nonce
/// makes every cursor different however little or much happened; the purpose and the
/// organization's id are sealed in, so a cursor of another organization or of another feed is
/// refused; the tag refuses any cursor the server never issued (the plain numbers of earlier
/// versions included).
public struct SealedCursor: Sendable {
    let prefix: String
    let purpose: String

    /// `Surveyd-Export-Cursor` and `afterCursor` of exports.
    public static let export = SealedCursor(prefix: "ec2.", purpose: "export")
    /// The changes feed's `cursor`, `nextCursor` and `after`.
    public static let changes = SealedCursor(prefix: "cc1.", purpose: "changes")

    func context(orgId: String) -> [UInt8] { Array("surveyd \(purpose) cursor\u{0}\(orgId)".utf8) }

    public func make(_ seq: Int64, orgId: String, key: [UInt8]) -> String {
        let plain = (0..<8).reversed().map { UInt8(truncatingIfNeeded: seq >> ($0 * 8)) }
        return prefix + Base64.encode(SealedBox.seal(plain, key: key, context: context(orgId: orgId)), url: true)
    }

    /// The sequence number, if this server issued the cursor to this organization for this
    /// purpose and it is no later than `latest` (the newest sequence number there is: a restored
    /// backup is behind).
    public func parse(_ s: String, orgId: String, key: [UInt8], latest: Int64 = .max) -> Int64? {
        guard s.hasPrefix(prefix) else { return nil }
        let text = String(s.dropFirst(prefix.count))
        guard let box = Base64.decode(text), box.count == 8 + SealedBox.overhead, Base64.encode(box, url: true) == text,
              let plain = SealedBox.open(box, key: key, context: context(orgId: orgId)), plain.count == 8 else { return nil }
        let n = plain.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return n >= 0 && n <= latest ? n : nil
    }
}
