/// Integer ids in ODK Central's paths, read strictly: digits only, no sign, no leading zero, at
/// most 18 digits (never an overflow), so `/v1/projects/01` is not project 1.
enum CentralIds {
    static func projectId(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), text.utf8.first != 48 else { return nil }
        return Int64(text)
    }
}
