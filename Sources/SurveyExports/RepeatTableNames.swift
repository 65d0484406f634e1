/// The names a form's repeat tables take in an export: a sheet of the workbook, an entry of the
/// zip. A repeat id (`[A-Za-z][A-Za-z0-9_]{0,63}`) cannot always be one as it is:
///
/// - Excel keeps 31 characters of a sheet name, and ids may have 64: two long ids may share
///   their first 31;
/// - Excel compares sheet names without case, and so do Windows and macOS file names, while ids
///   are compared with it (`members` and `Members` are two repeats);
/// - the responses' own sheet is `responses`.
///
/// libxlsxwriter refuses a sheet name that breaks one of Excel's rules, and a zip whose names
/// differ only in case loses a table when it is unpacked; so every name is made here, by one rule
/// for both formats: a name that is free and valid is kept; otherwise it is cut to fit and, when
/// still taken, told apart by `~2`, `~3`… (within the 31 characters of a sheet, before `.csv`
/// in the zip). A repeat that can keep its id as its name always does, whatever its place, so
/// another repeat's long or clashing id never takes it.
public enum RepeatTableNames {
    /// Excel's longest sheet name (libxlsxwriter's `LXW_SHEETNAME_MAX`).
    public static let sheetLimit = 31

    /// The sheet of each repeat in `ids`, in the same order, beside the `responses` sheet.
    public static func sheets(_ ids: [String]) -> [String] {
        // "History" is reserved by Excel (its change tracking); libxlsxwriter advises against it.
        distinct(ids.map(sheetSafe), taken: ["responses", "history"], limit: sheetLimit, ext: "")
    }

    /// The zip entry of each repeat's table in `ids`, in the same order: `responses-<id>.csv`.
    public static func zipEntries(_ ids: [String]) -> [String] {
        distinct(ids.map { "responses-" + ZipEntryName.safe($0) }, taken: ["responses.csv", "manifest.json"], limit: nil, ext: ".csv")
    }

    /// `name` without the characters Excel refuses in a sheet name (`[ ] : * ? / \`) and without
    /// apostrophes (refused first or last, and a cut could make any one last), each as `_`.
    static func sheetSafe(_ name: String) -> String {
        let safe = String(name.map { "[]:*?/\\'".contains($0) ? "_" : $0 })
        return safe.isEmpty ? "_" : safe
    }

    /// `stems[i] + ext` for each `i`, none of them equal to another or to one of `taken`, case
    /// ignored, none longer than `limit` characters (`ext` included). Two passes: first every
    /// name that fits and is free as it is, in order; then the others, cut to fit, then with
    /// `~2`, `~3`… until free.
    static func distinct(_ stems: [String], taken reserved: Set<String>, limit: Int?, ext: String) -> [String] {
        var taken = Set(reserved.map { $0.lowercased() })
        var out = [String?](repeating: nil, count: stems.count)
        for (i, stem) in stems.enumerated() where fits(stem + ext, limit) && taken.insert((stem + ext).lowercased()).inserted {
            out[i] = stem + ext
        }
        for (i, stem) in stems.enumerated() where out[i] == nil {
            var n = 1
            while true {
                let suffix = (n == 1 ? "" : "~\(n)") + ext
                let name = cut(stem, to: limit.map { $0 - count(suffix) }) + suffix
                n += 1
                if taken.insert(name.lowercased()).inserted {
                    out[i] = name
                    break
                }
            }
        }
        return out.compactMap { $0 }
    }

    /// libxlsxwriter counts a sheet name's code points, Excel its UTF-16 units: the larger.
    static func count(_ s: String) -> Int { max(s.unicodeScalars.count, s.utf16.count) }

    static func fits(_ s: String, _ limit: Int?) -> Bool { limit.map { count(s) <= $0 } ?? true }

    /// The longest start of `s` that fits `limit`, cut between characters.
    static func cut(_ s: String, to limit: Int?) -> String {
        guard let limit, !fits(s, limit) else { return s }
        var out = ""
        for c in s {
            guard fits(out + String(c), limit) else { break }
            out.append(c)
        }
        return out
    }
}
