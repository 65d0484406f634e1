/// Checks that a file's first bytes match the type it was declared as (1011 otherwise).
/// Only the types below are known; any other declared type never matches.
public enum FileSignature {
    /// How many leading bytes callers should pass; every byte given is examined.
    public static let prefixLength = 64

    /// `Image/JPEG; charset=x` → `image/jpeg`: parameters dropped, ASCII-lowercased, trimmed.
    public static func normalizedType(_ contentType: String) -> String {
        var u = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let f = u.first, f == 0x20 || f == 0x09 { u = u.dropFirst() }
        while let l = u.last, l == 0x20 || l == 0x09 { u = u.dropLast() }
        return String(decoding: u.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Text types are checked whole (`TextStreamCheck`), not only by their first bytes.
    public static func isTextType(_ contentType: String) -> Bool { kinds[normalizedType(contentType)] == .text }

    /// The declared types this sniffer knows, normalized.
    public static var knownTypes: Set<String> { Set(kinds.keys) }

    /// `prefix` is the start of the file (up to `prefixLength` bytes), `totalSize` its full size:
    /// a text file may end the prefix mid-character only when the file goes on after it.
    public static func matches(contentType: String, prefix: [UInt8], totalSize: Int) -> Bool {
        guard let kind = kinds[normalizedType(contentType)] else { return false }
        let p = prefix
        switch kind {
        case .jpeg: return starts(p, [0xFF, 0xD8, 0xFF])
        case .png: return starts(p, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case .gif: return starts(p, Array("GIF87a".utf8)) || starts(p, Array("GIF89a".utf8))
        case .webp: return riff(p, form: "WEBP")
        case .wav: return riff(p, form: "WAVE")
        case .pdf: return starts(p, Array("%PDF-".utf8))
        case .ogg: return starts(p, Array("OggS".utf8))
        case .heif: return ftypBrands(p).contains { heifBrands.contains($0) }
        case .mp4: return ftypBrands(p).contains { mp4Brands.contains($0) }
        case .threeGPP: return ftypBrands(p).contains { $0.hasPrefix("3gp") || $0.hasPrefix("3g2") }
        case .mp3:
            // An ID3v2 tag, or an MPEG audio frame header (11 set sync bits: FF Ex / FF Fx).
            return starts(p, Array("ID3".utf8)) || (p.count >= 2 && p[0] == 0xFF && p[1] & 0xE0 == 0xE0)
        case .text: return isText(p, cutAllowed: p.count < totalSize)
        case .sealed: return true // ciphertext: any bytes at all
        }
    }

    private enum Kind { case jpeg, png, gif, webp, heif, pdf, mp4, threeGPP, mp3, wav, ogg, text, sealed }

    /// Bytes no signature describes: an encrypted form's sealed files (`<name>.enc`). Taken only by
    /// a question that names this type itself, never through `*/*` (`Question.accepts`).
    public static let sealedType = "application/octet-stream"

    private static let kinds: [String: Kind] = [
        "image/jpeg": .jpeg, "image/png": .png, "image/gif": .gif, "image/webp": .webp,
        "image/heic": .heif, "image/heif": .heif, "application/pdf": .pdf,
        "video/mp4": .mp4, "audio/mp4": .mp4, "audio/x-m4a": .mp4, "audio/m4a": .mp4,
        "video/3gpp": .threeGPP, "audio/3gpp": .threeGPP, "audio/mpeg": .mp3,
        "audio/wav": .wav, "audio/x-wav": .wav, "audio/wave": .wav,
        "audio/ogg": .ogg, "video/ogg": .ogg, "application/ogg": .ogg,
        "text/plain": .text, "text/csv": .text, "text/xml": .text, "application/xml": .text, sealedType: .sealed,
    ]

    private static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]
    private static let mp4Brands: Set<String> = ["isom", "iso2", "mp41", "mp42", "M4A ", "M4V ", "avc1", "dash"]

    private static func starts(_ p: [UInt8], _ magic: [UInt8]) -> Bool {
        p.count >= magic.count && p[0..<magic.count].elementsEqual(magic)
    }

    /// `RIFF <size> <form>`
    private static func riff(_ p: [UInt8], form: String) -> Bool {
        starts(p, Array("RIFF".utf8)) && p.count >= 12 && p[8..<12].elementsEqual(form.utf8)
    }

    /// The major and compatible brands of an ISO-BMFF `ftyp` box at the start of the file,
    /// as far as the box lies within the prefix; empty when there is no such box.
    private static func ftypBrands(_ p: [UInt8]) -> [String] {
        guard p.count >= 16, p[4..<8].elementsEqual("ftyp".utf8) else { return [] }
        let size = Int(p[0]) << 24 | Int(p[1]) << 16 | Int(p[2]) << 8 | Int(p[3])
        // size, type, major brand and minor version take 16 bytes; 0 ("to end of file") and
        // 1 (64-bit size) are not used for ftyp.
        guard size >= 16 else { return [] }
        let end = min(size, p.count)
        var brands = [String(decoding: p[8..<12], as: UTF8.self)]
        var offset = 16  // compatible brands follow the minor version
        while offset + 4 <= end {
            brands.append(String(decoding: p[offset..<offset + 4], as: UTF8.self))
            offset += 4
        }
        return brands
    }

    /// Valid UTF-8 without NUL bytes; an empty file is text.
    private static func isText(_ p: [UInt8], cutAllowed: Bool) -> Bool {
        p.withUnsafeBufferPointer { buf in
            var i = 0
            while i < buf.count {
                let b = buf[i]
                if b == 0 { return false }
                if b < 0x80 { i += 1; continue }
                switch UTF8Validation.sequence(buf, at: i) {
                case .valid(let length): i += length
                case .truncated: return cutAllowed
                case .invalid: return false
                }
            }
            return true
        }
    }
}
