import Testing
@testable import SurveyDomain
@testable import SurveyForms

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// An ISO-BMFF ftyp box: size, "ftyp", major brand, minor version, compatible brands.
private func ftyp(_ major: String, _ compatible: [String], declaredSize: Int? = nil) -> [UInt8] {
    let size = declaredSize ?? 16 + 4 * compatible.count
    var b: [UInt8] = [UInt8(size >> 24 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
    b += bytes("ftyp") + bytes(major) + [0, 0, 0, 0]
    for c in compatible { b += bytes(c) }
    return b + [0, 0, 0, 8] + bytes("free")
}

private func matches(_ type: String, _ prefix: [UInt8], size: Int? = nil) -> Bool {
    FileSignature.matches(contentType: type, prefix: prefix, totalSize: size ?? prefix.count + 1000)
}

@Suite struct FileSignatureTests {
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + bytes("JFIF")
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + bytes("IHDR")
    static let riffWebP = bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WEBPVP8 ")
    static let riffWave = bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WAVEfmt ")

    @Test func normalizedType() {
        #expect(FileSignature.normalizedType("Image/JPEG") == "image/jpeg")
        #expect(FileSignature.normalizedType("text/plain; charset=UTF-8") == "text/plain")
        #expect(FileSignature.normalizedType("  TEXT/CSV ;header=present") == "text/csv")
        #expect(FileSignature.normalizedType("") == "")
    }

    @Test func images() {
        #expect(matches("image/jpeg", Self.jpeg))
        #expect(matches("IMAGE/JPEG; foo=bar", Self.jpeg))
        #expect(!matches("image/jpeg", [0xFF, 0xD8]))
        #expect(!matches("image/jpeg", Self.png))
        #expect(matches("image/png", Self.png))
        #expect(!matches("image/png", Array(Self.png.prefix(7))))
        #expect(matches("image/gif", bytes("GIF89a\u{1}\u{0}")))
        #expect(matches("image/gif", bytes("GIF87a")))
        #expect(!matches("image/gif", bytes("GIF88a")))
        #expect(matches("image/webp", Self.riffWebP))
        #expect(!matches("image/webp", Self.riffWave))
        #expect(!matches("image/webp", bytes("RIFF\0\0\0\0WEB")))
    }

    @Test func heif() {
        #expect(matches("image/heic", ftyp("heic", ["mif1", "heic"])))
        #expect(matches("image/heif", ftyp("mif1", ["heic"])))
        #expect(matches("image/heic", ftyp("msf1", [])))
        // A HEIF brand among the compatible brands is enough.
        #expect(matches("image/heif", ftyp("abcd", ["efgh", "heix"])))
        #expect(!matches("image/heic", ftyp("isom", ["mp42"])))
        // Brands past the box's declared size do not count.
        #expect(!matches("image/heic", ftyp("abcd", ["heic"], declaredSize: 16)))
        #expect(!matches("image/heic", ftyp("heic", [], declaredSize: 8)))
        // "ftyp" must sit at offset 4.
        #expect(!matches("image/heic", [0] + ftyp("heic", [])))
        #expect(!matches("image/heic", Self.jpeg))
    }

    @Test func isoMedia() {
        for type in ["video/mp4", "audio/mp4", "audio/x-m4a", "audio/m4a"] {
            #expect(matches(type, ftyp("isom", ["iso2", "avc1", "mp41"])), "\(type)")
            #expect(matches(type, ftyp("M4A ", ["M4A ", "mp42", "isom"])), "\(type)")
            #expect(matches(type, ftyp("XXXX", ["dash"])), "\(type)")
            #expect(!matches(type, ftyp("qt  ", ["qt  "])), "\(type)")
            #expect(!matches(type, ftyp("heic", ["mif1"])), "\(type)")
        }
        for type in ["video/3gpp", "audio/3gpp"] {
            #expect(matches(type, ftyp("3gp4", ["isom", "3gp4"])), "\(type)")
            #expect(matches(type, ftyp("3g2a", [])), "\(type)")
            #expect(matches(type, ftyp("isom", ["3gp5"])), "\(type)")
            #expect(!matches(type, ftyp("isom", ["mp42"])), "\(type)")
        }
    }

    @Test func pdfAndAudio() {
        #expect(matches("application/pdf", bytes("%PDF-1.7\n%âãÏÓ")))
        #expect(!matches("application/pdf", bytes("%PDF1.7")))
        #expect(!matches("application/pdf", bytes(" %PDF-1.7")))
        #expect(matches("audio/mpeg", bytes("ID3\u{4}\u{0}")))
        #expect(matches("audio/mpeg", [0xFF, 0xFB, 0x90, 0x64]))
        #expect(matches("audio/mpeg", [0xFF, 0xE3, 0x18, 0xC4]))
        #expect(!matches("audio/mpeg", [0xFF, 0xD8, 0xFF]))
        #expect(!matches("audio/mpeg", [0xFF]))
        #expect(!matches("audio/mpeg", bytes("ID")))
        for type in ["audio/wav", "audio/x-wav", "audio/wave"] {
            #expect(matches(type, Self.riffWave), "\(type)")
            #expect(!matches(type, Self.riffWebP), "\(type)")
        }
        for type in ["audio/ogg", "video/ogg", "application/ogg"] {
            #expect(matches(type, bytes("OggS\0\u{2}")), "\(type)")
            #expect(!matches(type, bytes("Oggs\0\u{2}")), "\(type)")
        }
    }

    @Test func text() {
        for type in ["text/plain", "text/csv", "text/csv; charset=utf-8"] {
            #expect(matches(type, bytes("name,age\nAnn,42\n")), "\(type)")
            #expect(matches(type, bytes("\u{FEFF}héllo €😀")), "\(type)")
            #expect(FileSignature.matches(contentType: type, prefix: [], totalSize: 0), "\(type)")
            #expect(!matches(type, bytes("a\0b")), "\(type)")
            #expect(!matches(type, [0x61, 0xFF, 0x62]), "\(type)")
            #expect(!matches(type, [0xC0, 0xAF]), "\(type)")          // overlong
            #expect(!matches(type, [0xED, 0xA0, 0x80]), "\(type)")    // surrogate
            #expect(!matches(type, Self.png), "\(type)")
        }
        // A multi-byte character cut by the end of the prefix is fine only if the file goes on.
        let cut = bytes("abc") + [0xE2, 0x82]  // first two bytes of "€"
        #expect(FileSignature.matches(contentType: "text/plain", prefix: cut, totalSize: 64))
        #expect(!FileSignature.matches(contentType: "text/plain", prefix: cut, totalSize: cut.count))
        // A broken sequence (not just cut) is never fine.
        #expect(!FileSignature.matches(contentType: "text/plain", prefix: bytes("abc") + [0xE2, 0x41], totalSize: 64))
    }

    @Test func unknownTypesNeverMatch() {
        for type in ["image/tiff", "video/quicktime", "image/*", "", "jpeg", "text/html"] {
            #expect(!matches(type, Self.jpeg), "\(type)")
            #expect(!matches(type, bytes("hello")), "\(type)")
        }
        #expect(FileSignature.knownTypes.count == 25)
    }

    /// An encrypted form's sealed files are any bytes at all, empty too.
    @Test func sealedBytesAlwaysMatchTheirOwnType() {
        for prefix in [Self.jpeg, bytes("hello"), [0x00, 0xFF, 0x13], []] {
            #expect(matches(FileSignature.sealedType, prefix))
        }
    }

    /// `*/*` never takes sealed bytes: only a question naming their type does.
    @Test func sealedBytesAreTakenOnlyWhereNamed() throws {
        let definition = try SurveyDefinition.parse([
            "title": "Files",
            "questions": [["id": "any", "type": "file", "label": "Any", "accept": ["*/*"]],
                          ["id": "sealed", "type": "file", "label": "Sealed", "accept": ["application/octet-stream"]]],
        ])
        #expect(definition.question(id: "any")?.accepts(contentType: "application/octet-stream") == false)
        #expect(definition.question(id: "any")?.accepts(contentType: "image/png") == true)
        #expect(definition.question(id: "sealed")?.accepts(contentType: "application/octet-stream") == true)
    }

    @Test func emptyFilesAreOnlyText() {
        for type in FileSignature.knownTypes where type != FileSignature.sealedType {
            let isText = type.hasPrefix("text/") || type == "application/xml"
            #expect(FileSignature.matches(contentType: type, prefix: [], totalSize: 0) == isText, "\(type)")
        }
    }
}
