/// One part of a zip entry's path, in a form every common file system extracts: Windows is the
/// strictest (`:` names an alternate data stream there, `CON` a device), so its rules are the ones
/// kept. Client ids may hold `:` and `.`, so the names built from them are passed through here.
enum ZipEntryName {
    /// Device names Windows reserves, with or without an extension, in any case.
    static let reserved: Set<String> = Set(["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
        + ["1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"].flatMap { ["COM" + $0, "LPT" + $0] })

    /// `part` with every character Windows refuses in a name (`\ / : * ? " < > |`, control
    /// characters) as `_`, a trailing dot or space as `_`, and a leading `_` before a reserved
    /// device name. Never empty.
    static func safe(_ part: String) -> String {
        var scalars = String.UnicodeScalarView()
        for s in part.unicodeScalars {
            let refused = s.value < 0x20 || s.value == 0x7F || "\\/:*?\"<>|".unicodeScalars.contains(s)
            scalars.append(refused ? "_" : s)
        }
        // Windows drops a trailing dot or space, so the name would change on the way out.
        if let last = scalars.last, last == "." || last == " " {
            scalars.removeLast()
            scalars.append("_")
        }
        var name = String(scalars)
        if name.isEmpty { name = "_" }
        // Windows looks at what comes before the first dot, trailing spaces ignored.
        let stem = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? name
        var trimmed = Substring(stem)
        while trimmed.last == " " { trimmed = trimmed.dropLast() }
        if reserved.contains(trimmed.uppercased()) { name = "_" + name }
        return name
    }

    /// `stem.ext`, or `stem~2.ext`, `stem~3.ext`… when `taken` already holds that name in another
    /// case (Windows and macOS do not tell `A` from `a`); the name chosen is added to `taken`
    /// (lowercased).
    static func unique(stem: String, ext: String, taken: inout Set<String>) -> String {
        var name = stem + "." + ext
        var n = 2
        while !taken.insert(name.lowercased()).inserted {
            name = stem + "~\(n)." + ext
            n += 1
        }
        return name
    }
}
