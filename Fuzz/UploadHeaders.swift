// The headers of uploads: `Content-Digest` (plain PUT), tus `Upload-Metadata`,
// `Upload-Checksum`, `Upload-Length` and `Upload-Offset`, and the base64 they carry. The input
// is read as one header value for each; its bytes also feed round trips: a digest, metadata
// pairs and raw bytes written the way a client writes them must be read back unchanged.
import SurveyDomain

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let s = String(decoding: bytes, as: UTF8.self)
    headers(s)
    roundTrips(bytes)
    return 0
}

private func headers(_ s: String) {
    if let digest = try? ContentDigest.sha256(fromHeader: s), digest.count != 32 {
        fatalError("Content-Digest \(s): \(digest.count) bytes")
    }
    if let meta = try? UploadMetadata.parse(s) {
        for key in meta.keys where key.isEmpty || key.contains(",") { fatalError("Upload-Metadata \(s): key \(key)") }
    }
    if let checksum = try? ChunkChecksum(header: s) {
        guard checksum.matches(checksum.expected), !checksum.matches(checksum.expected + [0]) else { fatalError("Upload-Checksum \(s)") }
    }
    if let length = TusHeader.uploadLength(s) {
        guard length >= 0, Int(s) == length else { fatalError("Upload-Length \(s): \(length)") }
    }
    if let offset = TusHeader.uploadOffset(s), Int64(s) != offset { fatalError("Upload-Offset \(s): \(offset)") }
    _ = Base64.decode(s)
}

private func roundTrips(_ bytes: [UInt8]) {
    for url in [false, true] {
        guard Base64.decode(Base64.encode(bytes, url: url)) == bytes else { fatalError("base64 (url: \(url)) of \(bytes)") }
    }
    if bytes.count >= 32 {
        let sha = Array(bytes.prefix(32))
        let header = "md5=:AAAA:, sha-256=:\(Base64.encode(sha)):"
        guard (try? ContentDigest.sha256(fromHeader: header)) == sha else { fatalError("Content-Digest \(header)") }
        guard (try? ChunkChecksum(header: "sha256 " + Base64.encode(sha)))?.expected == sha else { fatalError("Upload-Checksum of \(sha)") }
    }
    // Pairs separated by NUL bytes: a key (letters and digits only, as tus requires), a value.
    let parts = bytes.split(separator: 0, omittingEmptySubsequences: false)
    var pairs: [String: String] = [:]
    var k = 0
    while k + 1 < parts.count {
        let key = String(decoding: parts[k].filter { ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }, as: UTF8.self)
        if !key.isEmpty { pairs[key] = String(decoding: parts[k + 1], as: UTF8.self) }
        k += 2
    }
    let header = pairs.map { $0.value.isEmpty ? $0.key : "\($0.key) \(Base64.encode(Array($0.value.utf8)))" }.joined(separator: ",")
    guard let back = try? UploadMetadata.parse(header), back.count == pairs.count,
          pairs.allSatisfy({ back[$0.key]?.utf8.elementsEqual($0.value.utf8) == true }) else {
        fatalError("Upload-Metadata \(header) does not read back as \(pairs)")
    }
}
